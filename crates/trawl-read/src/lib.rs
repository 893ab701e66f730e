//! Reading: opening files without side effects, a bounded pool of reusable buffers, chunked
//! reads by plain `read(2)` or by memory-mapped windows (guarded against the file shrinking),
//! and detection of files that change while they are read.
//!
//! The face: opening ([`open_for_read`] and its variants, [`OpenedFile`], [`Stamp`]; a file
//! looked at without opening it, [`look`]; a small
//! input read whole, [`read_whole`]), buffers ([`BufferPool`]), reading ([`ChunkSource`] by
//! [`IoMethod`]), names opened beneath a directory that cannot leave it ([`RootDir`],
//! [`open_beneath`], [`Parents`]), directories held open ([`DirAt`]), the mapped window's
//! guard against a file that shrinks ([`guard_map`]), what the device is ([`device_seeks`],
//! [`first_extent`]), a thread's CPU clock, and a scan's CPU by stage ([`Stages`]).
#![deny(missing_docs)]

mod at;
mod beneath;
mod chunks;
mod clock;
mod disk;
mod open;
mod pool;
mod sigbus;
mod stages;

pub use at::{DirAt, Kind as EntryKind, Unread, is_plain_name};
pub use beneath::{
    LeadsOutside, Parents, Refused, RootDir, open_beneath, open_beneath_any, open_dir_beneath,
    open_no_links, open_path_no_links, plain_segments, stat_in,
};
pub use chunks::{AUTO_MAP_MIN, Chunk, ChunkSource, IoMethod, Window};
pub use clock::{process_cpu_time, thread_cpu_time};
pub use disk::{device_seeks, first_extent};
pub use open::{
    Looked, OpenedFile, Stamp, look, open_for_read, open_for_read_in, open_for_read_with, open_in,
    read_whole,
};
pub use pool::{BufferPool, PooledBuf, SPARE_BYTES};
pub use sigbus::{MapGuard, file_shrank_below, guard_map};
pub use stages::{Stage, StageFigures, Stages, ThreadClock};

use std::path::{Path, PathBuf};

/// A read failure, naming the file.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file was gone when it was opened.
    #[error("{}: vanished before it could be read", path.display())]
    Vanished {
        /// The path concerned.
        path: PathBuf,
    },
    /// The file could not be opened.
    #[error("{}: cannot open: {source}", path.display())]
    Open {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Its name leads outside its root (through `..` or a symbolic link), found when it was
    /// opened ([`LeadsOutside`]).
    #[error("{}: cannot open: {}", path.display(), LeadsOutside)]
    Outside {
        /// The path concerned.
        path: PathBuf,
    },
    /// A read failed.
    #[error("{}: read error: {source}", path.display())]
    Read {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A mapped page could not be had although the file did not shrink: the device failed to
    /// deliver it (`SIGBUS`).
    #[error(
        "{}: read error: a mapped page could not be read (SIGBUS: an I/O error on the device); no digest recorded",
        path.display()
    )]
    PageLost {
        /// The path concerned.
        path: PathBuf,
    },
    /// Not a regular file.
    #[error("{}: {what}, not read", path.display())]
    NotRegular {
        /// The path concerned.
        path: PathBuf,
        /// What it is.
        what: &'static str,
    },
    /// A file read whole that is larger than a file of its kind may be.
    #[error(
        "{}: {size} bytes, more than the {cap} a file of this kind may hold; not read",
        path.display()
    )]
    TooLarge {
        /// The path concerned.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The most read.
        cap: u64,
    },
    /// The file changed while it was read (size, time or identity).
    #[error("{}: changed while being read ({detail}); no digest recorded", path.display())]
    Changed {
        /// The path concerned.
        path: PathBuf,
        /// What changed.
        detail: String,
    },
}

impl ReadError {
    /// The file concerned.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Vanished { path }
            | ReadError::Open { path, .. }
            | ReadError::Outside { path }
            | ReadError::Read { path, .. }
            | ReadError::PageLost { path }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Changed { path, .. } => path,
        }
    }

    /// A short machine-readable kind for reports.
    pub fn kind(&self) -> &'static str {
        match self {
            ReadError::Vanished { .. } => "vanished",
            ReadError::Open { .. } | ReadError::Outside { .. } => "open",
            ReadError::Read { .. } | ReadError::PageLost { .. } => "read",
            ReadError::NotRegular { .. } => "not-regular",
            ReadError::TooLarge { .. } => "too-large",
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
