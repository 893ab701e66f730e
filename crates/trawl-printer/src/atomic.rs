//! A file that appears at its name only once completely written: data goes to a temporary file
//! in the same directory, which is flushed, synced and renamed over the target on `commit`. If the
//! writer is dropped without committing (an error, a full disk, Ctrl-C), the temporary file is
//! removed and the target is untouched.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub struct AtomicFile {
    target: PathBuf,
    inner: Option<BufWriter<tempfile::NamedTempFile>>,
}

impl AtomicFile {
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".trawl-tmp")
            .tempfile_in(dir)?;
        // tempfile creates 0600; the finished file gets the usual 0666 less the umask.
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o666 & !umask()))?;
        Ok(AtomicFile {
            target: target.to_path_buf(),
            inner: Some(BufWriter::with_capacity(1 << 16, tmp)),
        })
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Device and inode of the temporary file (so a scan can leave its own outputs out).
    pub fn identity(&self) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let md = self.inner.as_ref()?.get_ref().as_file().metadata().ok()?;
        Some((md.dev(), md.ino()))
    }

    /// The temporary file itself, with everything written so far flushed to it (for copies
    /// the kernel can do, such as `copy_file_range`).
    pub fn file_mut(&mut self) -> io::Result<&mut std::fs::File> {
        let w = self.inner.as_mut().expect("not yet committed");
        w.flush()?;
        Ok(w.get_mut().as_file_mut())
    }

    /// Flushes, syncs and renames into place.
    pub fn commit(self) -> io::Result<()> {
        self.commit_with(true)
    }

    /// Flushes and renames into place; `sync`: first wait for the data to reach the disk (a
    /// crash after the rename then cannot leave an empty or partial file under the name).
    pub fn commit_with(mut self, sync: bool) -> io::Result<()> {
        let w = self.inner.take().expect("not yet committed");
        let tmp = w.into_inner().map_err(|e| e.into_error())?;
        if sync {
            tmp.as_file().sync_all()?;
        }
        tmp.persist(&self.target).map_err(|e| e.error)?;
        Ok(())
    }
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
        self.inner.as_mut().expect("not yet committed").write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.inner
            .as_mut()
            .expect("not yet committed")
            .write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.as_mut().expect("not yet committed").flush()
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
}
