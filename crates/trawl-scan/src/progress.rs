//! The progress interface the engine reports to; the terminal bar lives in the binary.

use std::path::Path;

/// Receives progress from many threads at once; must be cheap.
pub trait Progress: Sync {
    /// The walk found `_files` more files of `_bytes` bytes.
    fn found(&self, _files: u64, _bytes: u64) {}
    /// The walk ended.
    fn walk_done(&self) {}
    /// A file's reading starts.
    fn start_file(&self, _path: &Path, _size: u64) {}
    /// `_bytes` more were read.
    fn read(&self, _bytes: u64) {}
    /// A file was read to its end, or failed.
    fn file_done(&self) {}
}

/// Reports nothing.
pub struct NoProgress;

impl Progress for NoProgress {}
