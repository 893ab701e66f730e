//! Connections, bounded in every way a client could hold them: a cap on how many are open (past
//! it a new client is answered 503 at once, with one log line when the cap is reached), a time limit
//! for a request's headers (slow clients that never finish them), an idle limit (no byte moved
//! either way: a stalled reader or an idle keep-alive), and a graceful stop that lets responses in
//! flight finish for a bounded time before the rest are dropped.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The limits; see the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once; past it, new clients get 503.
    pub max_connections: usize,
    /// How long a client has to send its request's headers.
    pub header_timeout: Duration,
    /// How long a connection may stay idle between requests.
    pub idle_timeout: Duration,
    /// How long responses in flight may go on after the stop.
    pub grace: Duration,
}

/// The open-file limit's share left for connections: the descriptor limit less what the server
/// needs for files it serves and its own use, at most 1024.
pub fn default_max_connections() -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills a struct we own.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur
    } else {
        1024
    };
    // Each connection may hold a socket and a served file.
    ((soft.saturating_sub(64) / 2) as usize).clamp(8, 1024)
}

/// When a connection last moved a byte, in milliseconds since `epoch`.
#[derive(Clone)]
pub struct Activity {
    epoch: Instant,
    last: Arc<AtomicU64>,
}

impl Activity {
    pub fn new() -> Activity {
        Activity {
            epoch: Instant::now(),
            last: Arc::new(AtomicU64::new(0)),
        }
    }

    fn touch(&self) {
        self.last
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// Resolves once no byte has moved for `limit`.
    pub async fn idle(&self, limit: Duration) {
        loop {
            let idle = self.idle_for();
            if idle >= limit {
                return;
            }
            tokio::time::sleep(limit - idle).await;
        }
    }
}

impl Default for Activity {
    fn default() -> Self {
        Activity::new()
    }
}

/// A stream that records each byte moved in its [`Activity`].
pub struct Watched<S> {
    inner: S,
    activity: Activity,
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Activity) -> Watched<S> {
        activity.touch();
        Watched { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }
    /// Passed through, so that the connection sends a response's head and its body chunks in
    /// one `writev` each time, without copying the chunks into a buffer of its own first (what
    /// it does for a stream that cannot write vectored).
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
