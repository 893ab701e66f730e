//! A served file's bytes as a response body: each chunk read with one `pread` on tokio's
//! blocking pool into a buffer of its own, handed to the connection, and freed once sent; the
//! next chunk is read while the connection sends this one. A connection whose client reads
//! slowly holds the chunk it could not send yet and the one read after it, nothing more.
//!
//! The chunk's size trades memory per slow client against one fast client's speed: on a
//! 2-core machine, 128 KiB gives about 280 KiB per slow client and 1.7 GB/s to one client (64
//! KiB: 160 KiB and 1.2 GB/s), past what a 10 Gbit/s link carries (`bench/serve_clients.py`).

use std::io;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::task::JoinHandle;

use crate::log::Slot;

/// Bytes read per step of a response body.
pub(crate) const CHUNK: usize = 128 << 10;

/// `prefix` (bytes made by the server: an FLV header and metadata before a seek), then the
/// file's bytes `from..to`; a read that fails is said in the request's log [`Slot`].
pub(crate) struct FileBody {
    file: Arc<std::fs::File>,
    prefix: Option<Bytes>,
    at: u64,
    end: u64,
    reading: Option<JoinHandle<io::Result<Bytes>>>,
    slot: Arc<Slot>,
}

impl FileBody {
    pub(crate) fn new(
        file: std::fs::File,
        prefix: Vec<u8>,
        from: u64,
        to: u64,
        slot: &Arc<Slot>,
    ) -> FileBody {
        FileBody {
            file: Arc::new(file),
            prefix: (!prefix.is_empty()).then(|| Bytes::from(prefix)),
            at: from,
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
        let (file, at) = (self.file.clone(), self.at);
        let n = (self.end - at).min(CHUNK as u64) as usize;
        self.reading = Some(tokio::task::spawn_blocking(move || {
            let mut buf = vec![0u8; n];
            file.read_exact_at(&mut buf, at)?;
            Ok(Bytes::from(buf))
        }));
    }
}

impl http_body::Body for FileBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        let this = self.get_mut();
        if let Some(p) = this.prefix.take() {
            return Poll::Ready(Some(Ok(Frame::data(p))));
        }
        if this.at >= this.end {
            return Poll::Ready(None);
        }
        if this.reading.is_none() {
            this.read_next();
        }
        let reading = this.reading.as_mut().expect("a read in flight");
        let done = match Pin::new(reading).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(r) => r,
        };
        this.reading = None;
        let chunk = done.unwrap_or_else(|e| Err(io::Error::other(e)));
        match chunk {
            Ok(b) => {
                this.at += b.len() as u64;
                // The next chunk is read while the connection sends this one.
                this.read_next();
                Poll::Ready(Some(Ok(Frame::data(b))))
            }
            Err(e) => {
                // A file shorter than its length when the answer began, or an I/O error: the
                // connection is cut before its Content-Length, and the log says why.
                this.at = this.end;
                this.slot.fail(&e);
                Poll::Ready(Some(Err(e)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.prefix.is_none() && self.at >= self.end
    }

    fn size_hint(&self) -> SizeHint {
        let prefix = self.prefix.as_ref().map_or(0, |p| p.len() as u64);
        SizeHint::with_exact(prefix + self.end.saturating_sub(self.at))
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
