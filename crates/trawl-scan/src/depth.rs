//! How many files are read at once: set by the device, not by the core count.
//!
//! The scan lets `limit` reader threads take work (starting each the first time it is let in;
//! one let out again waits). By default the limit starts at the compute threads (`-j`) and is
//! steered by what the readers measure on each batch of files: wall time, the thread's CPU
//! time, and the time spent waiting on the consumers (a free buffer, a lane's channel, the
//! results' channel). What is neither computing nor waiting on the consumers is waiting on the
//! device; by Little's law, keeping `threads` CPUs busy while each reader spends a fraction
//! `b` of its time on the device takes `threads / (1 - b)` readers. A warm cache (no device
//! waits) keeps the limit at `-j`; a cold disk raises it, up to [`MAX_READERS`]. `--io-depth N`
//! fixes it instead. In which order files are handed out is `order`'s.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

thread_local! {
    /// What this thread's consumers spent waiting for a lock shared with other readers, since
    /// it was last taken ([`waited_on_a_lock`], [`take_lock_waits`]).
    static LOCK_WAITS: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// Says that a consumer running on this (reader) thread waited `d` for a lock other readers
/// hold: waiting the depth rule must not take for the device's (more readers would only queue
/// for the lock). Called where the wait happens, and only then (a lock taken at once costs
/// nothing here).
pub fn waited_on_a_lock(d: Duration) {
    LOCK_WAITS.with(|w| w.set(w.get() + d));
}

/// This thread's lock waits since the last call.
pub(crate) fn take_lock_waits() -> Duration {
    LOCK_WAITS.with(|w| w.replace(Duration::ZERO))
}

/// Readers at most under the automatic setting (outstanding reads a fast SSD or a network
/// store rewards; the buffer pool, not this, bounds memory).
pub const MAX_READERS: usize = 64;

/// How often the limit is reconsidered.
pub(crate) const STEP: Duration = Duration::from_millis(50);

/// The reads in flight: the automatic setting, or a fixed number (`--io-depth N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoDepth {
    /// Steered by the device: more files at once while it keeps up.
    #[default]
    Auto,
    /// This many files read at once.
    Fixed(usize),
}

/// The readers that may take work, and what they measured since the last step.
pub(crate) struct Depth {
    limit: AtomicUsize,
    min: usize,
    max: usize,
    auto: bool,
    done: AtomicBool,
    /// Whether the last step's readers spent half their time or more waiting on the device.
    device_bound: AtomicBool,
    lock: Mutex<Instant>,
    cv: Condvar,
    wall_ns: AtomicU64,
    cpu_ns: AtomicU64,
    waited_ns: AtomicU64,
}

impl Depth {
    /// For `threads` compute threads.
    pub(crate) fn new(depth: IoDepth, threads: usize) -> Depth {
        let threads = threads.max(1);
        let (min, max, auto) = match depth {
            IoDepth::Auto => (threads, MAX_READERS.max(threads), true),
            IoDepth::Fixed(n) => (n.max(1), n.max(1), false),
        };
        Depth {
            limit: AtomicUsize::new(min),
            min,
            max,
            auto,
            done: AtomicBool::new(false),
            device_bound: AtomicBool::new(false),
            lock: Mutex::new(Instant::now()),
            cv: Condvar::new(),
            wall_ns: AtomicU64::new(0),
            cpu_ns: AtomicU64::new(0),
            waited_ns: AtomicU64::new(0),
        }
    }

    /// Reader threads it may let in at most.
    pub(crate) fn readers(&self) -> usize {
        self.max
    }

    /// Readers allowed to take work now.
    pub(crate) fn limit(&self) -> usize {
        self.limit.load(Ordering::SeqCst)
    }

    /// Waits until reader `i` may take work; false once there is none left to take (or the
    /// scan stops).
    pub(crate) fn admit(&self, i: usize, stopping: &dyn Fn() -> bool) -> bool {
        // The readers at work pass without a lock: it is taken only to wait.
        if i < self.limit() {
            return !self.done.load(Ordering::SeqCst) && !stopping();
        }
        let mut g = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if self.done.load(Ordering::SeqCst) || stopping() {
                return false;
            }
            if i < self.limit() {
                return true;
            }
            g = self
                .cv
                .wait_timeout(g, Duration::from_millis(100))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Whether the walk's files have all been taken.
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    /// No more work: every waiting reader goes.
    pub(crate) fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.cv.notify_all();
    }

    /// What one batch cost a reader.
    pub(crate) fn record(&self, wall: Duration, cpu: Duration, waited: Duration) {
        self.wall_ns
            .fetch_add(wall.as_nanos() as u64, Ordering::Relaxed);
        self.cpu_ns
            .fetch_add(cpu.as_nanos() as u64, Ordering::Relaxed);
        self.waited_ns
            .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
    }

    /// Whether the readers, at the last step, waited on the device half their time or more:
    /// reads that the page cache does not serve.
    pub(crate) fn device_bound(&self) -> bool {
        self.device_bound.load(Ordering::SeqCst)
    }

    /// Reconsiders the limit, at most every [`STEP`] (called from the results' loop).
    pub(crate) fn step(&self) {
        let mut last = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let interval = last.elapsed();
        if interval < STEP {
            return;
        }
        *last = Instant::now();
        let wall = self.wall_ns.swap(0, Ordering::Relaxed);
        let cpu = self.cpu_ns.swap(0, Ordering::Relaxed);
        let waited = self.waited_ns.swap(0, Ordering::Relaxed);
        let m = Measured {
            wall,
            cpu,
            waited,
            interval: interval.as_nanos() as u64,
        };
        if m.wall > 0 {
            self.device_bound
                .store(m.device_share() >= 0.5, Ordering::SeqCst);
        }
        if !self.auto {
            return;
        }
        let next = target(self.min, self.max, self.limit(), m);
        self.limit.store(next, Ordering::SeqCst);
        drop(last);
        self.cv.notify_all();
    }
}

/// What the readers' batches cost in one step, in nanoseconds: `wall` in all, of which `cpu`
/// computing and `waited` waiting on the consumers (the rest waiting on the device, or on a
/// lock); `interval`, the step's own length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measured {
    pub(crate) wall: u64,
    pub(crate) cpu: u64,
    pub(crate) waited: u64,
    pub(crate) interval: u64,
}

impl Measured {
    /// The share of the readers' time spent neither computing nor waiting on the consumers:
    /// waiting on the device.
    fn device_share(&self) -> f64 {
        self.wall
            .saturating_sub(self.cpu)
            .saturating_sub(self.waited) as f64
            / self.wall.max(1) as f64
    }
}

/// The readers that keep `min` CPUs busy: `min / (1 - device share)`, within `min..=max`. Not
/// more while the readers already keep nine tenths of `min` CPUs busy: what they wait on then is
/// a lock or the cores, not the device, and more readers only queue for it. A step moves at most
/// halfway down at once (a slow batch of cached files is no reason to drop every reader), and
/// nothing measured keeps `now`.
pub(crate) fn target(min: usize, max: usize, now: usize, m: Measured) -> usize {
    if m.wall == 0 {
        return now;
    }
    let device = m.device_share();
    let busy = (1.0 - device).max(1.0 / max as f64);
    // (less a hair, so that a share that is 0.9 in decimal asks for 10x, not 11x)
    let want = ((min as f64) / busy - 1e-9).ceil() as usize;
    // Under half the time blocked is a busy machine's noise (a reader waiting for a core, a
    // page fault), not a device that holds the readers back: the compute threads alone.
    let want = if device < 0.5 {
        min
    } else {
        want.clamp(min, max)
    };
    let cores_busy = m.cpu as f64 / m.interval.max(1) as f64;
    if want > now && cores_busy >= 0.9 * min as f64 {
        return now;
    }
    if want < now {
        want.max(now.div_ceil(2)).max(min)
    } else {
        want
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `wall`, `cpu` and `waited` over a step of 1,000 ns (the CPUs' busy share is `cpu`/1,000).
    fn t(min: usize, now: usize, wall: u64, cpu: u64, waited: u64) -> usize {
        let m = Measured {
            wall,
            cpu,
            waited,
            interval: 1_000,
        };
        target(min, 64, now, m)
    }

    #[test]
    fn readers_follow_the_time_spent_waiting_on_the_device() {
        // Warm: all computing (or waiting on the consumers): the compute threads alone.
        assert_eq!(t(2, 2, 2_000, 2_000, 0), 2);
        assert_eq!(t(2, 2, 2_000, 400, 1_600), 2);
        // Half the time on the device: twice the readers; 90%: ten times. Under half: noise.
        assert_eq!(t(2, 2, 2_000, 1_000, 0), 4);
        assert_eq!(t(2, 2, 2_000, 1_100, 0), 2);
        assert_eq!(t(2, 2, 2_000, 200, 0), 20);
        // All of it: as many as allowed.
        assert_eq!(t(2, 2, 2_000, 0, 0), 64);
        assert_eq!(t(16, 16, 16_000, 1_600, 0), 64);
        // Down by half at most per step, never under the compute threads.
        assert_eq!(t(2, 40, 40_000, 40_000, 0), 20);
        assert_eq!(t(2, 3, 3_000, 3_000, 0), 2);
        // Nothing measured: no change.
        assert_eq!(t(2, 17, 0, 0, 0), 17);
    }

    #[test]
    fn readers_that_keep_the_cores_busy_are_not_joined_by_more() {
        // 16 readers computing 15 of 16 cores' worth, the rest blocked (a lock, not the
        // device): no more readers.
        assert_eq!(t(16, 16, 16_000, 15_000, 0), 16);
        // The same blocked share with the cores mostly idle: the device, more readers.
        assert_eq!(t(16, 16, 16_000, 3_000, 0), 64);
    }

    #[test]
    fn a_fixed_depth_starts_that_many_and_never_moves() {
        let d = Depth::new(IoDepth::Fixed(8), 2);
        assert_eq!((d.readers(), d.limit()), (8, 8));
        d.record(Duration::from_secs(1), Duration::ZERO, Duration::ZERO);
        *d.lock.lock().unwrap() -= STEP;
        d.step();
        assert_eq!(d.limit(), 8);
        let a = Depth::new(IoDepth::Auto, 2);
        assert_eq!((a.readers(), a.limit()), (MAX_READERS, 2));
        a.record(
            Duration::from_secs(1),
            Duration::from_millis(100),
            Duration::ZERO,
        );
        // A step of a second: the readers kept a tenth of a core busy.
        *a.lock.lock().unwrap() -= Duration::from_secs(1);
        a.step();
        assert_eq!(a.limit(), 20);
    }

    #[test]
    fn reads_that_wait_on_the_device_are_seen_at_any_depth() {
        for depth in [IoDepth::Auto, IoDepth::Fixed(1)] {
            let d = Depth::new(depth, 2);
            assert!(!d.device_bound());
            // Nine tenths of the time on the device.
            d.record(
                Duration::from_secs(1),
                Duration::from_millis(100),
                Duration::ZERO,
            );
            *d.lock.lock().unwrap() -= STEP;
            d.step();
            assert!(d.device_bound(), "{depth:?}");
            // Then all of it computing: the page cache serves the reads.
            d.record(
                Duration::from_secs(1),
                Duration::from_secs(1),
                Duration::ZERO,
            );
            *d.lock.lock().unwrap() -= STEP;
            d.step();
            assert!(!d.device_bound(), "{depth:?}");
        }
    }
}
