//! Why something could not be checked: the crate's one error type.

use std::path::PathBuf;

/// Why something could not be checked: the path given to [`crate::validate`] (nothing was), or, for
/// an audit, an object (its inventory is not one to trust) or one of its logical files.
#[derive(Debug, thiserror::Error)]
pub enum OcflError {
    /// The path could not be listed (missing, not a directory, no permission).
    #[error("{}: {source}", path.display())]
    Io {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The path names no file in a directory (`/`, or a name ending in `..`).
    #[error("{}: not a file in a directory", path.display())]
    NoFileName {
        /// The path given.
        path: PathBuf,
    },
    /// An object's inventory could not be read.
    #[error("{}: {source}", path.display())]
    InventoryUnread {
        /// The inventory, below its object.
        path: PathBuf,
        /// Why.
        source: trawl_read::Unread,
    },
    /// An object's inventory is not one that can be audited by (not JSON, or its first
    /// error).
    #[error("{}: {message}", path.display())]
    InventoryInvalid {
        /// The inventory, below its object.
        path: PathBuf,
        /// Its first error.
        message: String,
    },
    /// An object's inventory lists no version.
    #[error("{} lists no version (or its `versions` are not a sequence)", path.display())]
    NoVersion {
        /// The inventory, below its object.
        path: PathBuf,
    },
    /// An object's inventory names a digest algorithm trawl does not compute.
    #[error("{}: digest algorithm {algorithm}", path.display())]
    UnknownAlgorithm {
        /// The inventory, below its object.
        path: PathBuf,
        /// The algorithm it names.
        algorithm: String,
    },
    /// An object's inventory does not match its sidecar.
    #[error("{}: {message}: the inventory is not trusted", path.display())]
    Untrusted {
        /// The sidecar (or the inventory) the fault is in, below the object.
        path: PathBuf,
        /// The fault.
        message: String,
    },
    /// A logical file whose state digest the manifest does not hold (the path below the
    /// object is the audit's item's).
    #[error(
        "the inventory's state gives it digest {digest}, which its manifest does not hold: not audited"
    )]
    StateDigestUnknown {
        /// The logical file, `VERSION/LOGICAL` below its object.
        path: PathBuf,
        /// The state's digest.
        digest: String,
    },
    /// A logical file whose content path is not a file in one of the object's version
    /// directories: never looked for.
    #[error(
        "the inventory gives its content as '{content}', which is not a file in one of the object's version directories: not looked for"
    )]
    ContentOutside {
        /// The logical file, `VERSION/LOGICAL` below its object.
        path: PathBuf,
        /// The content path the inventory gives.
        content: String,
    },
    /// A logical file whose digest is not of the form of the inventory's algorithm.
    #[error(
        "the inventory's digest for it, {digest}, is not of the form of {algorithm}: not audited"
    )]
    DigestForm {
        /// The logical file, `VERSION/LOGICAL` below its object.
        path: PathBuf,
        /// The digest.
        digest: String,
        /// The inventory's algorithm.
        algorithm: String,
    },
}
