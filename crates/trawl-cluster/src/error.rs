//! What can go wrong in a cluster's pieces, each naming what it was working on.

/// An error from a cluster's piece of work.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Bytes from another process that do not decode: another version, or damage.
    #[error("{what}: cannot decode ({reason}); are all workers on this version?")]
    Wire {
        /// What was being decoded.
        what: String,
        /// Why.
        reason: String,
    },
    /// A listing task asked for a root the walk does not have.
    #[error("no root number {0}")]
    NoRoot(usize),
    /// An algorithm name the catalog holds that this build does not compute.
    #[error("{0}")]
    Algorithm(String),
    /// A shard's scan could not run (its spill or record files).
    #[error(transparent)]
    Scan(#[from] trawl_engine::ScanRunError),
    /// The shard's options cannot work together (another configuration on the client).
    #[error(transparent)]
    Options(#[from] trawl_engine::OptionsError),
    /// A shard's scan stopped before its end.
    #[error("the shard's scan stopped: {0}")]
    Stopped(String),
    /// A file of the client's or a worker's own (records, spills) could not be written or read.
    #[error("{what}: {source}")]
    Io {
        /// What it is.
        what: &'static str,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A directory a worker could not list, for a reason with no system error number: the
    /// worker's words. The walk's error this is the cause of names the path; these words do
    /// not repeat it.
    #[error("{message}")]
    Unlisted {
        /// The directory.
        path: std::path::PathBuf,
        /// The worker's words.
        message: String,
    },
    /// A listing task's directory that is no prefix below its `s3://` root.
    #[error("{}: not a prefix below {} to list", path.display(), root.display())]
    NotALevel {
        /// The directory given.
        path: std::path::PathBuf,
        /// The root.
        root: std::path::PathBuf,
    },
    /// An audit's reads failed on the worker.
    #[error(transparent)]
    Source(#[from] trawl_catalog::SourceError),
}

impl ClusterError {
    pub(crate) fn wire(what: impl Into<String>, reason: impl std::fmt::Display) -> ClusterError {
        ClusterError::Wire {
            what: what.into(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn io(what: &'static str) -> impl FnOnce(std::io::Error) -> ClusterError {
        move |source| ClusterError::Io { what, source }
    }
}
