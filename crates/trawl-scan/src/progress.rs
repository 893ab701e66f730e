//! The progress interface the engine reports to; the terminal bar lives in the binary.

use std::path::Path;

/// Receives progress from many threads at once; must be cheap.
pub trait Progress: Sync {
    fn found(&self, _files: u64, _bytes: u64) {}
    fn walk_done(&self) {}
    fn start_file(&self, _path: &Path, _size: u64) {}
    fn read(&self, _bytes: u64) {}
    /// A file was read to its end, or failed.
    fn file_done(&self) {}
}

/// Reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {}
