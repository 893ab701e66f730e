//! `trawl serve`: FLV files under a directory over HTTP (hyper on tokio). `GET /f.flv?start=N`
//! answers a playable stream from the last keyframe at or before N (see `seek.rs` for how seconds
//! and bytes are told apart); plain GET and HEAD serve whole files, with single byte ranges
//! (`If-Range` honoured). Connections are bounded as `conn.rs` says ([`Limits`]); each request's line in the
//! common log format, and the server's troubles, are handed to the caller as [`Notice`]s
//! (the library prints nothing).
//!
//! The face: [`serve`] runs a [`ServeConfig`] ([`Limits`], [`Serving`], [`Notices`]) until its
//! stop token, or fails with a [`ServeError`]; a request's failure on the server's side reaches
//! the [`Notices`] as a [`RequestError`] ([`BodyError`] for a body cut short); [`parse_range`],
//! [`parse_start`] and [`keyframe_for`] are the request parsers the fuzz targets drive.
#![deny(missing_docs)]

mod body;
mod cache;
mod cached;
mod conn;
mod listing;
mod log;
mod range;
mod resolve;
mod respond;
mod seek;
mod server;

pub use body::BodyError;
pub use conn::{Limits, default_max_connections};
pub use log::{Notice, Notices, RequestError};
pub use range::{Ranged, parse as parse_range};
pub use resolve::Serving;
pub use seek::{Start, keyframe_for, parse_start};
pub use server::serve;

use std::path::PathBuf;

/// Why the server could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The directory to serve cannot be opened.
    #[error("{}: {source}", path.display())]
    Root {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The address cannot be listened on.
    #[error("{addr}: cannot listen: {source}")]
    Listen {
        /// The address as given.
        addr: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The directory to serve is not one.
    #[error("{}: not a directory", path.display())]
    NotADirectory {
        /// The path concerned.
        path: PathBuf,
    },
    /// The server's own I/O failed.
    #[error("server: {0}")]
    Io(#[from] std::io::Error),
}

/// What to serve, where, and how.
pub struct ServeConfig {
    /// The directory served; nothing outside it is.
    pub root: PathBuf,
    /// The address to listen on (`HOST:PORT`).
    pub listen: String,
    /// Worker threads (default: the number of CPUs).
    pub threads: Option<usize>,
    /// Connection limits and timeouts.
    pub limits: conn::Limits,
    /// One common-log-format line per request, as [`log::Notice::Access`].
    pub access_log: bool,
    /// Where the access log and the server's troubles go.
    pub notices: log::Notices,
    /// FLV files only, or every regular file (dotfiles and catalogs aside).
    pub serving: resolve::Serving,
}
