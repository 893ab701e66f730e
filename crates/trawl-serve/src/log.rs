//! The access log: one common-log-format line per request, written once its body is done
//! (sent, or dropped when the client went away), with the bytes that went out rather than the
//! bytes promised in `Content-Length`.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// One request's line: the part known when the response is made, and the body's bytes as they
/// go; printed when the last holder (the handler, or the body's reader) lets go of it.
#[derive(Debug, Default)]
pub struct Slot {
    line: Mutex<Option<String>>,
    sent: AtomicU64,
    streamed: AtomicBool,
}

impl Slot {
    /// Sets the line (everything but the byte count); unset, nothing is printed.
    pub fn set(&self, line: String) {
        *self.line.lock().unwrap_or_else(|p| p.into_inner()) = Some(line);
    }

    /// Bytes of the body handed to the connection so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let line = self
            .line
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(line) = line {
            // Common log format: "-" for no body.
            let n = self.sent.load(Ordering::Relaxed);
            if self.streamed.load(Ordering::Relaxed) && n > 0 {
                to_stderr(format_args!("{line} {n}"));
            } else {
                to_stderr(format_args!("{line} -"));
            }
        }
    }
}

/// A body's reader that counts what it hands out into its request's [`Slot`].
pub struct Counted<R> {
    inner: R,
    slot: Arc<Slot>,
}

impl<R> Counted<R> {
    pub fn new(inner: R, slot: &Arc<Slot>) -> Counted<R> {
        slot.streamed.store(true, Ordering::Relaxed);
        Counted {
            inner,
            slot: slot.clone(),
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &r {
            let n = (buf.filled().len() - before) as u64;
            self.slot.sent.fetch_add(n, Ordering::Relaxed);
        }
        r
    }
}

/// Writes one line of the log (or a notice) to stderr; a stderr whose reader has gone loses the
/// line and nothing else (`eprintln!` would panic, and the release build aborts on a panic).
pub(crate) fn to_stderr(line: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut e = std::io::stderr().lock();
    let _ = e.write_fmt(format_args!("{line}\n"));
}
