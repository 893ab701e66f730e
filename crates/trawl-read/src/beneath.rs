//! Opening a file by a relative name beneath a directory, in one step that cannot leave it:
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` from the directory's descriptor, or, where
//! the kernel lacks it or refuses (an absolute symbolic link), a walk one component at a time
//! with `openat(O_NOFOLLOW)` from held directory descriptors, following a symbolic link only
//! after checking that its target stays beneath. A name swapped for a link between a check and an
//! open therefore cannot reach outside: there is no separate check. The final open never blocks
//! (`O_NONBLOCK`) and only a regular file is returned. Written by hand because no maintained
//! crate offers this fallback for kernels (and seccomp profiles) without `openat2`.

use std::collections::VecDeque;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// A name that leads outside its root, carried as the error of an `io::Result` where an opener
/// must answer one (an entry's opener beneath a root): told apart by its type, never its text,
/// and made [`ReadError::Outside`](crate::ReadError::Outside) by
/// [`open_for_read_with`](crate::open_for_read_with). Its text is the one wording for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("leads outside the root through a symbolic link: not read")]
pub struct LeadsOutside;

impl LeadsOutside {
    /// As an opener's error.
    pub fn into_io(self) -> io::Error {
        io::Error::other(self)
    }

    /// Whether `e` is one (an opener's [`LeadsOutside::into_io`]).
    pub fn is(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|inner| inner.is::<LeadsOutside>())
    }
}

/// Why a name is not opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It would leave the directory (through `..` or a symbolic link).
    Outside,
    /// Nothing there, too many links, or not a regular file.
    NotFound,
}

/// Symbolic links followed in one request before giving up (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// A directory: its canonical path and a descriptor every lookup starts from.
pub struct RootDir {
    path: PathBuf,
    fd: OwnedFd,
}

impl RootDir {
    /// `path` must be a directory; it is canonicalized once, here.
    pub fn open(path: &Path) -> io::Result<RootDir> {
        let path = path.canonicalize()?;
        let fd = open_at(
            libc::AT_FDCWD,
            path.as_os_str().as_bytes(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )?;
        Ok(RootDir { path, fd })
    }

    /// The directory's path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn cstr(b: &[u8]) -> io::Result<CString> {
    CString::new(b).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

pub(crate) fn open_at(dir: libc::c_int, name: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = cstr(name)?;
    // SAFETY: openat with a valid C string; the returned descriptor is owned here.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Flags of the final open: read only, never a controlling terminal, never blocking on a FIFO.
const FILE_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;

/// Flags of a directory opened only to look names up in it.
const DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// `openat2` beneath `dir` with `flags`; `ENOSYS` where the kernel (or a seccomp filter) lacks
/// it.
fn openat2_beneath(dir: &OwnedFd, rel: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    openat2_with(
        dir,
        rel,
        flags,
        libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
    )
}

/// `openat2` from `dir` with `flags` and `resolve`.
fn openat2_with(
    dir: &OwnedFd,
    rel: &[u8],
    flags: libc::c_int,
    resolve: u64,
) -> io::Result<OwnedFd> {
    let c = cstr(rel)?;
    // SAFETY: open_how is plain data; zeroed then filled.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = flags as u64;
    how.resolve = resolve;
    // SAFETY: the syscall reads the C string and the struct, both alive across the call.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir.as_raw_fd(),
            c.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// Opens the regular file that `segs` (plain names: no empty, `.` or `..` segment) name
/// beneath `root`.
pub fn open_beneath(root: &RootDir, segs: Vec<Vec<u8>>) -> Result<File, Refused> {
    regular(open_beneath_any(root, segs)?)
}

/// As [`open_beneath`], whatever the file is (a FIFO or device is opened without blocking, for
/// the caller's `fstat` to name it).
pub fn open_beneath_any(root: &RootDir, segs: Vec<Vec<u8>>) -> Result<File, Refused> {
    if segs.is_empty() {
        return Err(Refused::NotFound);
    }
    plain(&segs)?;
    resolve(root, segs, FILE_FLAGS).map(File::from)
}

/// Refuses segments that are not plain names (empty, `.`, `..`, or holding `/` or NUL).
fn plain(segs: &[Vec<u8>]) -> Result<(), Refused> {
    if segs
        .iter()
        .any(|s| s.is_empty() || s == b"." || s == b".." || s.contains(&b'/') || s.contains(&0))
    {
        return Err(Refused::Outside);
    }
    Ok(())
}

/// Opens the directory that `segs` (plain names) name beneath `root`, as an `O_PATH`
/// descriptor to open names in with `openat`: symbolic links on the way are followed only
/// where they stay beneath. No `segs`: the root itself.
pub fn open_dir_beneath(root: &RootDir, segs: Vec<Vec<u8>>) -> Result<File, Refused> {
    if segs.is_empty() {
        return root
            .fd
            .try_clone()
            .map(File::from)
            .map_err(|_| Refused::NotFound);
    }
    plain(&segs)?;
    resolve(root, segs, DIR_FLAGS).map(File::from)
}

/// `openat2` with `flags`, else the walk with the same flags for the last component.
fn resolve(root: &RootDir, segs: Vec<Vec<u8>>, flags: libc::c_int) -> Result<OwnedFd, Refused> {
    let rel = segs.join(&b'/');
    let fd = match openat2_beneath(&root.fd, &rel, flags) {
        Ok(fd) => fd,
        // No openat2 (ENOSYS; EPERM from a seccomp filter), or it refused something the walk
        // decides precisely: EXDEV (a link that leaves, or an absolute link that may stay
        // beneath), ELOOP (a magic link or too many links).
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS | libc::EPERM | libc::EXDEV | libc::ELOOP)
            ) =>
        {
            walk(root, segs, flags)?
        }
        Err(_) => return Err(Refused::NotFound),
    };
    Ok(fd)
}

/// Opens what `segs` (plain names) name beneath `root` without following a symbolic link
/// anywhere: a link on the way, or at the end, is [`Refused::Outside`] (for trees whose rules
/// forbid links, so that a link can never make one part of the tree stand in for another).
/// Whatever the name is, it is opened as `O_PATH` (nothing is read, no device is opened), for
/// the caller to `fstat`; a FIFO or device is returned as such.
pub fn open_path_no_links(root: &RootDir, segs: Vec<Vec<u8>>) -> Result<File, Refused> {
    if segs.is_empty() {
        return Err(Refused::NotFound);
    }
    plain(&segs)?;
    let f = File::from(no_links(
        root,
        segs,
        libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
    )?);
    // `O_PATH | O_NOFOLLOW` opens a link at the end as itself.
    match f.metadata() {
        Ok(m) if m.file_type().is_symlink() => Err(Refused::Outside),
        Ok(_) => Ok(f),
        Err(_) => Err(Refused::NotFound),
    }
}

/// As [`open_path_no_links`], opened to be read: only a regular file is returned, opened
/// without blocking.
pub fn open_no_links(root: &RootDir, segs: Vec<Vec<u8>>) -> Result<File, Refused> {
    if segs.is_empty() {
        return Err(Refused::NotFound);
    }
    plain(&segs)?;
    regular(File::from(no_links(
        root,
        segs,
        FILE_FLAGS | libc::O_NOFOLLOW,
    )?))
}

/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, else one component at a time with
/// `O_NOFOLLOW`; a component that is a link is refused as leaving.
fn no_links(root: &RootDir, segs: Vec<Vec<u8>>, flags: libc::c_int) -> Result<OwnedFd, Refused> {
    let rel = segs.join(&b'/');
    match openat2_with(
        &root.fd,
        &rel,
        flags,
        libc::RESOLVE_BENEATH | libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    ) {
        Ok(fd) => return Ok(fd),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(Refused::Outside),
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)) => {}
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => {}
        Err(_) => return Err(Refused::NotFound),
    }
    let mut dir = root.fd.try_clone().map_err(|_| Refused::NotFound)?;
    let n = segs.len();
    for (i, c) in segs.into_iter().enumerate() {
        let last = i + 1 == n;
        let f = if last {
            flags | libc::O_NOFOLLOW
        } else {
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
        };
        match open_at(dir.as_raw_fd(), &c, f) {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => dir = fd,
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                // A link, or a name that is not a directory where one is needed.
                return Err(if readlink_at(dir.as_raw_fd(), &c).is_ok() {
                    Refused::Outside
                } else {
                    Refused::NotFound
                });
            }
            Err(_) => return Err(Refused::NotFound),
        }
    }
    Err(Refused::NotFound)
}

/// The parent directories of names beneath one root, each opened with [`open_dir_beneath`];
/// the last one is kept, since names come sorted and neighbours share it. For readers that
/// open a file by its name in its directory's descriptor (`O_NOFOLLOW`), so that no name
/// swapped for a link while they run reaches outside the root.
pub struct Parents {
    root: std::sync::Arc<RootDir>,
    last: Option<(Vec<Vec<u8>>, std::sync::Arc<File>)>,
}

impl Parents {
    /// Parent directories opened beneath `root`, each kept for the names that follow in it.
    pub fn new(root: RootDir) -> Parents {
        Parents {
            root: std::sync::Arc::new(root),
            last: None,
        }
    }

    /// The root, shared (for openers that resolve a whole name beneath it later).
    pub fn root(&self) -> &std::sync::Arc<RootDir> {
        &self.root
    }

    /// The directory that holds `rel` (a name relative to the root), and `rel`'s last
    /// component.
    pub fn parent(&mut self, rel: &[u8]) -> Result<(std::sync::Arc<File>, Vec<u8>), Refused> {
        let mut segs = plain_segments(rel).ok_or(Refused::Outside)?;
        let name = segs.pop().ok_or(Refused::NotFound)?;
        if let Some((s, d)) = &self.last
            && *s == segs
        {
            return Ok((d.clone(), name));
        }
        let d = std::sync::Arc::new(open_dir_beneath(&self.root, segs.clone())?);
        self.last = Some((segs, d.clone()));
        Ok((d, name))
    }
}

/// Splits a relative name on `/`, leaving out empty and `.` segments; `None` if it is
/// absolute or holds `..`.
pub fn plain_segments(rel: &[u8]) -> Option<Vec<Vec<u8>>> {
    if rel.first() == Some(&b'/') {
        return None;
    }
    let mut out = Vec::new();
    for s in rel.split(|&b| b == b'/') {
        match s {
            b"" | b"." => {}
            b".." => return None,
            s => out.push(s.to_vec()),
        }
    }
    Some(out)
}

fn regular(file: File) -> Result<File, Refused> {
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(file),
        _ => Err(Refused::NotFound),
    }
}

/// The component-by-component resolution (see the module documentation).
fn walk(root: &RootDir, segs: Vec<Vec<u8>>, last_flags: libc::c_int) -> Result<OwnedFd, Refused> {
    let dup = root.fd.try_clone().map_err(|_| Refused::NotFound)?;
    // The directories opened so far, root first: `..` in a link's target pops one, and can
    // never pop the root.
    let mut dirs: Vec<OwnedFd> = vec![dup];
    let mut todo: VecDeque<Vec<u8>> = segs.into();
    let mut links = 0;
    while let Some(c) = todo.pop_front() {
        match c.as_slice() {
            b"" | b"." => continue,
            b".." => {
                if dirs.len() == 1 {
                    return Err(Refused::Outside);
                }
                dirs.pop();
                continue;
            }
            _ => {}
        }
        let dir = dirs.last().expect("root stays").as_raw_fd();
        let last = todo.iter().all(|s| s.is_empty() || s == b".");
        let flags = if last {
            last_flags | libc::O_NOFOLLOW
        } else {
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC
        };
        match open_at(dir, &c, flags) {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => dirs.push(fd),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                // Perhaps a symbolic link: read it where it is now, and go on from its target.
                let target = readlink_at(dir, &c).map_err(|_| Refused::NotFound)?;
                links += 1;
                if links > MAX_LINKS {
                    return Err(Refused::NotFound);
                }
                let rest = if target.first() == Some(&b'/') {
                    let inside = Path::new(std::ffi::OsStr::from_bytes(&target))
                        .strip_prefix(&root.path)
                        .map_err(|_| Refused::Outside)?;
                    dirs.truncate(1);
                    inside.as_os_str().as_bytes().to_vec()
                } else {
                    target
                };
                for s in rest.split(|&b| b == b'/').rev() {
                    todo.push_front(s.to_vec());
                }
            }
            Err(_) => return Err(Refused::NotFound),
        }
    }
    Err(Refused::NotFound)
}

/// What `name` in the directory `dir` is, without following a link: (size, device, inode,
/// modification time in nanoseconds); `None` if nothing is there.
pub fn stat_in(dir: &File, name: &[u8]) -> Option<(u64, u64, u64, i64)> {
    let c = cstr(name).ok()?;
    // SAFETY: stat is plain data, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor alive for the call, a C string and an out-pointer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (r == 0).then(|| {
        (
            st.st_size as u64,
            st.st_dev,
            st.st_ino,
            st.st_mtime
                .wrapping_mul(1_000_000_000)
                .wrapping_add(st.st_mtime_nsec),
        )
    })
}

/// [`crate::look`] of `name` in `dir`: one `fstatat` that follows no link; None unless it is a
/// regular file.
pub(crate) fn stat_at(dir: &File, name: &[u8]) -> Option<crate::Looked> {
    let c = cstr(name).ok()?;
    // SAFETY: stat is plain data, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor alive for the call, a C string and an out-pointer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    // nlink_t is u64 on x86-64, u32 on some other targets.
    #[allow(clippy::useless_conversion)]
    let nlink = u64::from(st.st_nlink);
    (r == 0 && st.st_mode & libc::S_IFMT == libc::S_IFREG).then(|| crate::Looked {
        stamp: crate::Stamp {
            size: st.st_size as u64,
            mtime_sec: st.st_mtime,
            mtime_nsec: st.st_mtime_nsec,
            ino: st.st_ino,
            dev: st.st_dev,
            ctime_ns: st
                .st_ctime
                .wrapping_mul(1_000_000_000)
                .wrapping_add(st.st_ctime_nsec),
        },
        nlink,
        disk_bytes: st.st_blocks as u64 * 512,
    })
}

fn readlink_at(dir: libc::c_int, name: &[u8]) -> io::Result<Vec<u8>> {
    let c = cstr(name)?;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: readlinkat writes at most buf.len() bytes into buf.
    let n = unsafe { libc::readlinkat(dir, c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(n as usize);
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> (tempfile::TempDir, RootDir) {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("served");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a b.flv"), b"x").unwrap();
        std::fs::write(top.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(top.path().join("secret"), root.join("out")).unwrap();
        std::os::unix::fs::symlink("../secret", root.join("out_rel")).unwrap();
        std::os::unix::fs::symlink("sub/../../secret", root.join("out_dots")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/a b.flv"), root.join("in")).unwrap();
        std::os::unix::fs::symlink("sub/../sub/a b.flv", root.join("in_rel")).unwrap();
        std::os::unix::fs::symlink("/proc/self/root/etc/hostname", root.join("magic")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let r = RootDir::open(&root).unwrap();
        (top, r)
    }

    fn segs(p: &str) -> Vec<Vec<u8>> {
        plain_segments(p.as_bytes()).unwrap()
    }

    type Opener<'a> = &'a dyn Fn(&RootDir, Vec<Vec<u8>>) -> Result<File, Refused>;

    fn check(root: &RootDir, open: Opener<'_>) {
        use std::io::Read;
        let mut s = String::new();
        open(root, segs("sub/a b.flv"))
            .unwrap()
            .read_to_string(&mut s)
            .unwrap();
        assert_eq!(s, "x");
        assert!(open(root, segs("in")).is_ok());
        assert!(open(root, segs("in_rel")).is_ok());
        for bad in ["out", "out_rel", "out_dots", "magic"] {
            assert_eq!(open(root, segs(bad)).err(), Some(Refused::Outside), "{bad}");
        }
        assert_eq!(open(root, segs("nope")).err(), Some(Refused::NotFound));
        assert_eq!(open(root, segs("sub")).err(), Some(Refused::NotFound));
        assert_eq!(open(root, segs("loop")).err(), Some(Refused::NotFound));
    }

    #[test]
    fn links_that_leave_are_refused() {
        let (_top, root) = fixture();
        check(&root, &open_beneath);
        assert_eq!(
            open_beneath(&root, vec![b"..".to_vec(), b"secret".to_vec()]).err(),
            Some(Refused::Outside)
        );
        assert_eq!(plain_segments(b"../x"), None);
        assert_eq!(plain_segments(b"/etc/x"), None);
    }

    #[test]
    fn the_walk_alone_refuses_the_same() {
        // The fallback for kernels without openat2, checked on its own.
        let (_top, root) = fixture();
        check(&root, &|r, s| regular(File::from(walk(r, s, FILE_FLAGS)?)));
    }

    #[test]
    fn no_link_is_followed_where_none_may_be() {
        let (_top, root) = fixture();
        std::fs::create_dir(root.path().join("d")).unwrap();
        std::fs::write(root.path().join("d/f"), b"y").unwrap();
        std::os::unix::fs::symlink("d", root.path().join("dl")).unwrap();
        assert!(open_no_links(&root, segs("sub/a b.flv")).is_ok());
        assert!(open_no_links(&root, segs("d/f")).is_ok());
        // Links that stay beneath are refused too, on the way or at the end.
        for bad in ["in", "in_rel", "dl/f", "out", "magic"] {
            assert_eq!(
                open_no_links(&root, segs(bad)).err(),
                Some(Refused::Outside),
                "{bad}"
            );
            assert_eq!(
                open_path_no_links(&root, segs(bad)).err(),
                Some(Refused::Outside),
                "{bad}"
            );
            // The walk alone decides the same.
            assert_eq!(
                no_links(&root, segs(bad), FILE_FLAGS).err(),
                Some(Refused::Outside),
                "{bad}"
            );
        }
        assert_eq!(
            open_no_links(&root, segs("nope")).err(),
            Some(Refused::NotFound)
        );
        assert_eq!(
            open_no_links(&root, segs("d/f/x")).err(),
            Some(Refused::NotFound)
        );
        assert!(open_path_no_links(&root, segs("d")).is_ok());
    }

    #[test]
    fn a_fifo_is_not_waited_on() {
        let (_top, root) = fixture();
        let c = CString::new(root.path().join("fifo").as_os_str().as_bytes()).unwrap();
        // SAFETY: mkfifo on a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert_eq!(
            open_beneath(&root, segs("fifo")).err(),
            Some(Refused::NotFound)
        );
    }
}
