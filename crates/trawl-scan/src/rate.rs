//! `--limit-rate`: a lock-free pacing of all readers together (GCRA on a shared virtual clock),
//! applied where readers report bytes read, so that an audit does not saturate production storage.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::Progress;

/// Paces consumers to `rate` bytes per second, with a burst of a quarter second.
pub struct RateLimiter {
    start: Instant,
    /// Nanoseconds since `start` at which the bytes granted so far are "paid for".
    clock: AtomicU64,
    ns_per_byte: f64,
    burst_ns: u64,
}

impl RateLimiter {
    /// A limiter at `rate` bytes per second.
    pub fn new(rate: u64) -> RateLimiter {
        RateLimiter {
            start: Instant::now(),
            clock: AtomicU64::new(0),
            ns_per_byte: 1e9 / rate.max(1) as f64,
            burst_ns: 250_000_000,
        }
    }

    /// Accounts for `bytes` just read; sleeps as long as needed to keep to the rate.
    pub fn consume(&self, bytes: u64) {
        let cost = (bytes as f64 * self.ns_per_byte) as u64;
        let now = self.start.elapsed().as_nanos() as u64;
        let floor = now.saturating_sub(self.burst_ns);
        let mut cur = self.clock.load(Ordering::Relaxed);
        let due = loop {
            let next = cur.max(floor) + cost;
            match self
                .clock
                .compare_exchange_weak(cur, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break next,
                Err(c) => cur = c,
            }
        };
        if due > now + self.burst_ns {
            std::thread::sleep(Duration::from_nanos(due - now - self.burst_ns));
        }
    }
}

/// A progress sink that also paces the readers that report to it.
pub(crate) struct Throttled<'a> {
    pub inner: &'a dyn Progress,
    pub limiter: &'a RateLimiter,
}

impl Progress for Throttled<'_> {
    fn found(&self, files: u64, bytes: u64) {
        self.inner.found(files, bytes)
    }
    fn walk_done(&self) {
        self.inner.walk_done()
    }
    fn start_file(&self, path: &Path, size: u64) {
        self.inner.start_file(path, size)
    }
    fn read(&self, bytes: u64) {
        self.inner.read(bytes);
        self.limiter.consume(bytes);
    }
    fn file_done(&self) {
        self.inner.file_done()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_to_the_rate_across_threads() {
        // 4 threads read 1 MiB chunks at 8 MiB/s in all: 24 MiB beyond the burst take ~3 s.
        let l = RateLimiter::new(8 << 20);
        let t0 = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..6 {
                        l.consume(1 << 20);
                    }
                });
            }
        });
        let secs = t0.elapsed().as_secs_f64();
        // 24 MiB at 8 MiB/s = 3 s, less the quarter-second burst allowance.
        assert!(secs > 2.5 && secs < 4.0, "took {secs} s");
    }
}
