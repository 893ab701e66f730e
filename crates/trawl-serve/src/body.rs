//! A served file's bytes as a response body. The first frame is ready before the response is
//! made ([`first_frame`]: the bytes the server makes, such as a seek's FLV header and codec
//! tags, then the file's first chunk), so that the connection sends the head and it in one
//! write. Each later chunk is read into a buffer of its own, handed to the connection and freed
//! once sent: from the page cache on the connection's thread when it is there (see
//! `cached.rs`), else with one `pread` on tokio's blocking pool, the next chunk then read while
//! the connection sends this one. A connection whose client reads slowly holds the chunk it
//! could not send yet (and, from storage, the one read after it), nothing more.
//!
//! The chunk's size trades memory per slow client against one fast client's speed: on a
//! 2-core machine, 128 KiB chunks read from the page cache hold about 140 KiB per slow client
//! and give one client 1.4 GB/s, past what a 10 Gbit/s link carries (`bench/serve_clients.py`;
//! read ahead on the blocking pool, as every chunk was before, they held 280-300 KiB).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::task::JoinHandle;

use crate::cached;
use crate::log::{RequestError, Slot};

/// Bytes read per step of a response body.
pub(crate) const CHUNK: usize = 128 << 10;

/// An answer's first frame: `prefix`, then the file's bytes from `from` up to a chunk (and
/// `to`): from the page cache on this thread, else on the blocking pool (`path`, the request's,
/// names a failure of that task). Fewer file bytes only
/// where the file ends first; an error (the storage cannot deliver) comes before anything is
/// sent, for a 500 rather than a 200 cut short at its start. Also returns the file back.
pub(crate) async fn first_frame(
    file: std::fs::File,
    prefix: Vec<u8>,
    from: u64,
    to: u64,
    path: &str,
) -> Result<(std::fs::File, Bytes, u64), RequestError> {
    let n = (to.saturating_sub(from)).min(CHUNK as u64) as usize;
    let mut buf = prefix;
    let start = buf.len();
    if n == 0 || cached::append_cached(&file, from, n, &mut buf) > 0 {
        let at = from + (buf.len() - start) as u64;
        return Ok((file, Bytes::from(buf), at));
    }
    let (file, r) = tokio::task::spawn_blocking(move || {
        let r = cached::append_waiting(&file, from, n, &mut buf).map(|()| buf);
        (file, r)
    })
    .await
    .map_err(|source| RequestError::Task {
        path: path.to_string(),
        source,
    })?;
    let buf = r?;
    let at = from + (buf.len() - start) as u64;
    Ok((file, Bytes::from(buf), at))
}

/// Why a file's body stopped before its end (its length was promised: the connection is cut,
/// and the request's log line says why).
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Reading the file failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The file is shorter than its length when the answer began: it changed meanwhile.
    #[error("the file is shorter than when its answer began")]
    Shorter {
        /// The request's path.
        path: String,
    },
    /// The blocking read panicked or was cancelled.
    #[error("{source}")]
    Task {
        /// The request's path.
        path: String,
        /// What became of the read.
        source: tokio::task::JoinError,
    },
}

/// `first` (a frame made by [`first_frame`]), then the file's bytes `at..to`; a read that fails
/// is said in the request's log [`Slot`].
pub(crate) struct FileBody {
    file: Arc<std::fs::File>,
    first: Option<Bytes>,
    at: u64,
    end: u64,
    reading: Option<JoinHandle<Result<Bytes, BodyError>>>,
    slot: Arc<Slot>,
}

impl FileBody {
    pub(crate) fn new(
        file: std::fs::File,
        first: Bytes,
        at: u64,
        to: u64,
        slot: &Arc<Slot>,
    ) -> FileBody {
        FileBody {
            file: Arc::new(file),
            first: (!first.is_empty()).then_some(first),
            at,
            end: to,
            reading: None,
            slot: slot.clone(),
        }
    }
}

impl FileBody {
    /// Starts reading the chunk at `at` on the blocking pool, if any is left.
    fn read_next(&mut self) {
        if self.at >= self.end {
            return;
        }
        let (file, at, slot) = (self.file.clone(), self.at, self.slot.clone());
        let n = (self.end - at).min(CHUNK as u64) as usize;
        self.reading = Some(tokio::task::spawn_blocking(move || {
            let mut buf = Vec::new();
            cached::append_waiting(&file, at, n, &mut buf)?;
            if buf.len() < n {
                return Err(BodyError::Shorter {
                    path: slot.path().to_string(),
                });
            }
            Ok(Bytes::from(buf))
        }));
    }
}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = Arc<BodyError>;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Arc<BodyError>>>> {
        let this = self.get_mut();
        if let Some(p) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(p))));
        }
        if this.at >= this.end {
            return Poll::Ready(None);
        }
        if this.reading.is_none() {
            // What the page cache holds is read here, at once; nothing read ahead (the next
            // poll reads the next chunk as quickly).
            let n = (this.end - this.at).min(CHUNK as u64) as usize;
            let mut buf = Vec::new();
            if cached::append_cached(&this.file, this.at, n, &mut buf) > 0 {
                this.at += buf.len() as u64;
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(buf)))));
            }
            this.read_next();
        }
        let reading = this.reading.as_mut().expect("a read in flight");
        let done = match Pin::new(reading).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(r) => r,
        };
        this.reading = None;
        let chunk = done.unwrap_or_else(|source| {
            Err(BodyError::Task {
                path: this.slot.path().to_string(),
                source,
            })
        });
        match chunk {
            Ok(b) => {
                this.at += b.len() as u64;
                // From storage: the next chunk is read while the connection sends this one.
                this.read_next();
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Err(e) => {
                // A file shorter than its length when the answer began, or an I/O error: the
                // connection is cut before its Content-Length, and the log says why.
                this.at = this.end;
                let e = Arc::new(e);
                this.slot.fail(e.clone());
                Poll::Ready(Some(Err(e)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.first.is_none() && self.at >= self.end
    }

    fn size_hint(&self) -> SizeHint {
        let first = self.first.as_ref().map_or(0, |p| p.len() as u64);
        SizeHint::with_exact(first + self.end.saturating_sub(self.at))
    }
}

impl Drop for FileBody {
    fn drop(&mut self) {
        // A read still on the blocking pool finishes there; its chunk is dropped with it.
        if let Some(r) = self.reading.take() {
            r.abort();
        }
    }
}

/// Any response body, its data counted into the request's log [`Slot`] as the connection takes
/// it: the access log's byte count is what went out, whatever made the body (a file, an error
/// page, a listing).
pub(crate) struct Counted {
    inner: axum::body::Body,
    slot: Arc<Slot>,
}

impl Counted {
    pub(crate) fn new(inner: axum::body::Body, slot: Arc<Slot>) -> Counted {
        Counted { inner, slot }
    }
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(f))) = &r
            && let Some(d) = f.data_ref()
        {
            self.slot.sent(d.len() as u64);
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{Notice, Notices};
    use http_body::Body as _;
    use std::io::Write;
    use std::sync::Mutex;

    /// A file shorter than the length its answer promised: the body stops with its own error,
    /// and the request's log says the response was cut short, and why.
    #[test]
    fn a_file_shorter_than_its_answer_cuts_the_body_with_its_own_error() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let said = Arc::new(Mutex::new(Vec::new()));
        let to = said.clone();
        let notices: Notices = Arc::new(move |n| {
            if let Notice::Internal { error, .. } = n {
                to.lock().unwrap().push(error.to_string());
            }
        });
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"0123456789").unwrap();
        let slot = Arc::new(Slot::new(&notices, "/f.flv"));
        let mut body = FileBody::new(f, Bytes::new(), 0, 100, &slot);
        let err = rt.block_on(async {
            loop {
                match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    Some(Ok(_)) => continue,
                    Some(Err(e)) => break e,
                    None => panic!("the body ended without its promised length"),
                }
            }
        });
        assert!(
            matches!(&*err, BodyError::Shorter { path } if path == "/f.flv"),
            "{err:?}"
        );
        drop((body, slot));
        assert_eq!(
            *said.lock().unwrap(),
            [
                "read failed after 0 bytes of the body were sent, and the response was cut short: \
              the file is shorter than when its answer began"
            ]
        );
    }
}
