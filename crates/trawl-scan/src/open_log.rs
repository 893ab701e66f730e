//! Tests only (debug builds): the paths of the files the readers open, in order, appended one a
//! line to the file `TRAWL_TEST_OPEN_LOG` names, so that a test can see the order of the reads.

use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// Notes that `path` is about to be opened for reading.
pub(crate) fn opening(path: &Path) {
    static LOG: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();
    let log = LOG.get_or_init(|| {
        let name = std::env::var_os("TRAWL_TEST_OPEN_LOG")?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(name)
            .expect("TRAWL_TEST_OPEN_LOG names a file that can be written");
        Some(Mutex::new(file))
    });
    if let Some(log) = log {
        use std::os::unix::ffi::OsStrExt;
        let mut f = log.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f.write_all(path.as_os_str().as_bytes());
        let _ = f.write_all(b"\n");
    }
}
