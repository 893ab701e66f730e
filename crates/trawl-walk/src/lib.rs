//! The walk: finds every regular file under the roots, in parallel, and says what it skipped.
//!
//! Nothing is filtered unless the user says so: this is fixity, so hidden files, `.gitignore`d
//! files and VCS directories are all included. Entries that are not regular files (FIFOs,
//! sockets, devices, unfollowed symlinks) are reported as skipped and are never opened. What the
//! user excludes ([`Exclusion`], in `exclude.rs`) is reported as excluded: a directory excluded
//! is never opened or listed. The walker (`walker.rs`, [`walk`], [`walk_batched`]) inspects each
//! root and lists its tree (`tree.rs`); what a skipped entry is, is `kind.rs`'s.

// Unsafe code only in tests (to make FIFOs).
#![deny(missing_docs)]
#![cfg_attr(not(test), forbid(unsafe_code))]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_read::Stages;

mod exclude;
mod kind;
mod tree;
mod walker;

pub use exclude::{ExcludeError, Exclusion, ExclusionBuilder, Why};
pub use tree::{Listing, list_directory};
pub use walker::{BATCH, walk, walk_batched};

/// What the walk found.
#[derive(Debug)]
pub enum WalkItem {
    /// A regular file.
    File(FileEntry),
    /// Something that is not read, and why.
    Skipped {
        /// The entry.
        path: PathBuf,
        /// What it is.
        kind: SkipKind,
    },
    /// A directory or entry that could not be listed or inspected.
    Error(WalkError),
    /// An entry the user's rules leave out (a directory excluded is not listed).
    Excluded(Excluded),
}

/// An entry left out by the user's rules ([`WalkOptions::excluding`]).
#[derive(Debug, Clone)]
pub struct Excluded {
    /// The entry (root joined with the relative part).
    pub path: PathBuf,
    /// Index of the root it was found under.
    pub root: usize,
    /// What it is.
    pub kind: ExcludedKind,
    /// A regular file's size (None for the rest, or where it could not be looked at).
    pub size: Option<u64>,
    /// Why it is left out.
    pub why: Why,
}

/// What an excluded entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExcludedKind {
    /// A directory: left out whole, never listed.
    Directory,
    /// A regular file.
    File,
    /// Anything else (a link not followed, a FIFO, ...).
    Other(SkipKind),
}

impl ExcludedKind {
    /// Its name in reports: `directory`, `file`, or a skip kind's name.
    pub fn name(self) -> &'static str {
        match self {
            ExcludedKind::Directory => "directory",
            ExcludedKind::File => "file",
            ExcludedKind::Other(k) => k.name(),
        }
    }
}

/// A regular file to read.
#[derive(Debug, Clone)]
pub struct FileEntry {
    /// The path to open (root joined with the relative part).
    pub path: PathBuf,
    /// Index of the root it was found under.
    pub root: usize,
    /// Size when walked (the reader checks it again).
    pub size: u64,
    /// Device it is on.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Modification time when walked, in nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// The directory it was listed from (an `O_PATH` descriptor), for opening it by its name
    /// alone; None where it was not listed (a root, a manifest's entry).
    pub dir: Option<std::sync::Arc<std::fs::File>>,
    /// How to open it, where neither its path nor its name in `dir` will do (a manifest's name
    /// resolved beneath a root, links that stay beneath it followed): the reader calls it
    /// instead.
    pub open: Option<Opener>,
}

/// A way to open one file (see [`FileEntry::open`]).
#[derive(Clone)]
pub struct Opener(pub std::sync::Arc<dyn Fn() -> std::io::Result<std::fs::File> + Send + Sync>);

impl std::fmt::Debug for Opener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Opener")
    }
}

/// Why an entry was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipKind {
    /// A named pipe.
    Fifo,
    /// A Unix socket.
    Socket,
    /// A block device.
    BlockDevice,
    /// A character device.
    CharDevice,
    /// A symbolic link, not followed.
    Symlink,
    /// With `--follow`: a link back to a directory being walked (walked once, not again).
    SymlinkLoop,
    /// Anything else that is not a regular file.
    Other,
}

/// A walk failure, always naming the path concerned.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// A symbolic link that leads back to a directory above it.
    #[error("{}: symbolic link loop (points back to {})", path.display(), ancestor.display())]
    Loop {
        /// The link.
        path: PathBuf,
        /// The directory it leads back to.
        ancestor: PathBuf,
    },
    /// A directory or entry that could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Another failure, its message naming the path.
    #[error("{0}")]
    Other(String),
    /// An entry left unread by a rule of the tree it is in (a symbolic link where none may be
    /// followed, a name that would leave the tree), and why.
    #[error("{}: {reason}", path.display())]
    Refused {
        /// The entry.
        path: PathBuf,
        /// Why it is not read.
        reason: String,
    },
}

impl WalkError {
    /// The path concerned, when the error has one of its own.
    pub fn path(&self) -> Option<&Path> {
        match self {
            WalkError::Loop { path, .. }
            | WalkError::Io { path, .. }
            | WalkError::Refused { path, .. } => Some(path),
            WalkError::Other(_) => None,
        }
    }
}

/// How to walk.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// Follow symbolic links (loops are named and walked once).
    pub follow_links: bool,
    /// Stay on each root's file system.
    pub one_file_system: bool,
    /// Directories listed at once.
    pub threads: usize,
    /// Directories not to enter (compared with the walked paths as they are spelled: give them
    /// under the same spelling as the roots, e.g. both canonical). Not reported: the caller's
    /// own (an audit's registered roots, walked apart).
    pub exclude: Vec<PathBuf>,
    /// What the user leaves out (`--exclude`): each entry it matches is reported as
    /// [`WalkItem::Excluded`], a directory without being listed.
    pub excluding: Exclusion,
    /// Stat every file as it is found, for its size, mtime, device and inode. Without it a
    /// file is known by its name and type alone (from the directory listing) and its
    /// `FileEntry` has zeros there: one system call less per file, for a reader that stats
    /// what it opens anyway.
    pub metadata: bool,
    /// Where the walking threads' CPU time and waits are counted (the scan's own).
    pub stages: Arc<Stages>,
}

impl Default for WalkOptions {
    fn default() -> Self {
        WalkOptions {
            follow_links: false,
            one_file_system: false,
            threads: 2,
            exclude: Vec::new(),
            excluding: Exclusion::default(),
            metadata: true,
            stages: Arc::default(),
        }
    }
}
