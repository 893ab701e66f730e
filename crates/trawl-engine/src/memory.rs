//! What the process holds itself: its anonymous memory (heap, stacks, buffers), apart from the
//! pages of files it maps to read them, which the kernel counts as resident too but drops
//! whenever it needs the room. `--memory` bounds the first; the peak resident figure
//! (`VmHWM`) holds both.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The highest anonymous memory seen so far in this process.
static PEAK_ANON: AtomicU64 = AtomicU64::new(0);

/// How often a running scan looks: often enough to see a buffer pool filled, cheap (one read
/// of a few dozen bytes of `/proc`).
const EVERY: Duration = Duration::from_millis(10);

/// This process's anonymous memory now: resident pages less those backed by a file or shared
/// (`/proc/self/statm`'s resident and shared).
fn anon_now() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut f = statm.split_whitespace().skip(1);
    let resident: u64 = f.next()?.parse().ok()?;
    let shared: u64 = f.next()?.parse().ok()?;
    // SAFETY: sysconf only reads a system setting.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = u64::try_from(page).ok().filter(|p| *p > 0)?;
    Some(resident.saturating_sub(shared) * page)
}

/// The peak of the anonymous memory this process held so far: the samples a running scan
/// took and one taken now. None where `/proc` cannot tell.
pub fn peak_anon() -> Option<u64> {
    let now = anon_now()?;
    Some(PEAK_ANON.fetch_max(now, Ordering::Relaxed).max(now))
}

/// Samples the anonymous memory while it lives (a scan's run), in a thread of its own that
/// ends when it is dropped.
pub(crate) struct Watch {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watch {
    pub(crate) fn start() -> Watch {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("trawl-memory".into())
            .spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(EVERY)
                {
                    if peak_anon().is_none() {
                        return;
                    }
                }
            })
            .ok();
        Watch {
            stop: Some(stop),
            thread,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
