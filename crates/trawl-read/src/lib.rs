//! Reading: opening files without side effects, a bounded pool of reusable buffers, chunked
//! reads by plain `read(2)` or by memory-mapped windows (guarded against the file shrinking),
//! and detection of files that change while they are read.
#![warn(missing_docs)]

pub mod at;
pub mod beneath;
pub mod clock;
pub mod disk;
pub mod open;
pub mod pool;
pub mod sigbus;
pub mod source;

pub use open::{OpenedFile, Stamp, open_for_read, open_for_read_in, open_for_read_with, open_in};
pub use pool::{BufferPool, PooledBuf};
pub use source::{Chunk, ChunkSource, IoMethod};

use std::path::{Path, PathBuf};

/// A read failure, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{}: vanished before it could be read", path.display())]
    Vanished { path: PathBuf },
    #[error("{}: cannot open: {source}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: read error: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {what}, not read", path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{}: changed while being read ({detail}); no digest recorded", path.display())]
    Changed { path: PathBuf, detail: String },
}

impl ReadError {
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Vanished { path }
            | ReadError::Open { path, .. }
            | ReadError::Read { path, .. }
            | ReadError::NotRegular { path, .. }
            | ReadError::Changed { path, .. } => path,
        }
    }

    /// A short machine-readable kind for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            ReadError::Vanished { .. } => "vanished",
            ReadError::Open { .. } => "open",
            ReadError::Read { .. } => "read",
            ReadError::NotRegular { .. } => "not-regular",
            ReadError::Changed { .. } => "changed-during-read",
        }
    }

    /// The message without the path prefix.
    pub fn reason(&self) -> String {
        let full = self.to_string();
        let p = format!("{}: ", self.path().display());
        full.strip_prefix(&p).map(str::to_string).unwrap_or(full)
    }
}
