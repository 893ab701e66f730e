//! What the server has to say, handed to the caller to render ([`Notice`], [`Notices`]): the
//! access log, one common-log-format line per request once its body is done (sent, or dropped
//! when the client went away), with the bytes that went out rather than the bytes promised in
//! `Content-Length`; and the server's own troubles.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::body::BodyError;

/// Something the server has to say; the caller decides how it is shown.
#[derive(Debug)]
pub enum Notice<'a> {
    /// One request, in the common log format, the bytes sent last (`-` for no body).
    Access(&'a str),
    /// A connection could not be accepted (out of descriptors, reset while queued); the server
    /// waits a moment and goes on.
    AcceptFailed(&'a io::Error),
    /// The connection limit was reached: new clients get 503 until one closes.
    AtCapacity {
        /// The limit.
        max_connections: usize,
    },
    /// Responses still in flight after the grace period were cut off at the stop.
    CutOff {
        /// The grace period.
        grace: std::time::Duration,
    },
    /// A request failed on the server's side: the client got a bare 500, the detail is here.
    Internal {
        /// The request's path.
        path: &'a str,
        /// What failed.
        error: &'a RequestError,
    },
}

/// What failed on the server's side of a request ([`Notice::Internal`]).
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// Opening or reading the file, or writing the answer, failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The body was cut short: the file could not be read on after `sent` bytes of it went out.
    #[error(
        "read failed after {sent} bytes of the body were sent, and the response was cut short: {source}"
    )]
    CutShort {
        /// The request's path.
        path: String,
        /// The body's bytes sent before the failure.
        sent: u64,
        /// Why the body stopped.
        source: Arc<BodyError>,
    },
    /// The blocking task making the answer panicked or was cancelled.
    #[error("the task making the answer failed: {source}")]
    Task {
        /// The request's path.
        path: String,
        /// What became of the task.
        source: tokio::task::JoinError,
    },
}

/// Where notices go: called from the server's threads.
pub type Notices = Arc<dyn Fn(Notice<'_>) + Send + Sync>;

/// One request's line: the part known when the response is made, and the body's bytes as they
/// go; handed on when the last holder (the handler, or the body's reader) lets go of it.
pub struct Slot {
    line: Mutex<Option<String>>,
    sent: AtomicU64,
    /// The request's path, for a read that fails while the body is sent.
    path: String,
    /// Why the body was cut short (the file could not be read on), if it was.
    failed: Mutex<Option<Arc<BodyError>>>,
    notices: Notices,
}

impl Slot {
    pub fn new(notices: &Notices, path: &str) -> Slot {
        Slot {
            line: Mutex::new(None),
            sent: AtomicU64::new(0),
            path: path.to_string(),
            failed: Mutex::new(None),
            notices: notices.clone(),
        }
    }
}

impl Slot {
    /// The request's path, as the client sent it.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    /// `n` more bytes of the body handed to the connection.
    pub(crate) fn sent(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// The body was cut short: the file could not be read on.
    pub(crate) fn fail(&self, e: Arc<BodyError>) {
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
    }

    /// Sets the line (everything but the byte count); unset, nothing is printed.
    pub fn set(&self, line: String) {
        *self.line.lock().unwrap_or_else(|p| p.into_inner()) = Some(line);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        // A body cut short by a read error: the client saw its connection close before the
        // length it was promised; the log says why.
        if let Some(e) = self
            .failed
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let error = RequestError::CutShort {
                path: self.path.clone(),
                sent: self.sent.load(Ordering::Relaxed),
                source: e,
            };
            (self.notices)(Notice::Internal {
                path: &self.path,
                error: &error,
            });
        }
        let line = self
            .line
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(line) = line {
            // Common log format: "-" for no body.
            let n = self.sent.load(Ordering::Relaxed);
            let line = if n > 0 {
                format!("{line} {n}")
            } else {
                format!("{line} -")
            };
            (self.notices)(Notice::Access(&line));
        }
    }
}
