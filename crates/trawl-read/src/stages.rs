//! Where a scan's CPU goes: every thread's CPU time at its end, and the time it waited on a
//! hand-off (a channel, a lock), summed by the stage it served; the busiest single thread of
//! each stage kept too, since one thread's share of the whole caps the speed-up more cores give.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::thread_cpu_time;

/// A part of the scan with threads of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Listing directories: the feeder and the walk's workers.
    Walk,
    /// Putting the listed files in reading order and passing them on to the readers.
    Order,
    /// The readers: reading, and digesting and counting files that fit in one buffer.
    Read,
    /// A thread per lane for a file larger than a buffer (digests, the reduction).
    Lanes,
    /// The reduction's partitions settled in parallel at the end.
    Reduce,
    /// The caller's thread: the readers' results taken in, the counts settled, the report made.
    Merge,
    /// What the caller writes once the scan is done (manifests, reports).
    Output,
}

impl Stage {
    /// Every stage, in the order a scan runs them.
    pub const ALL: [Stage; 7] = [
        Stage::Walk,
        Stage::Order,
        Stage::Read,
        Stage::Lanes,
        Stage::Reduce,
        Stage::Merge,
        Stage::Output,
    ];

    /// Its name in `--stats` and the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Walk => "walk",
            Stage::Order => "order",
            Stage::Read => "read",
            Stage::Lanes => "lanes",
            Stage::Reduce => "reduce",
            Stage::Merge => "merge",
            Stage::Output => "output",
        }
    }
}

/// One stage's running totals, in nanoseconds.
#[derive(Debug, Default)]
struct Tally {
    threads: AtomicU64,
    cpu_ns: AtomicU64,
    busiest_ns: AtomicU64,
    waited_ns: AtomicU64,
}

/// The per-stage totals of one scan, shared by its threads.
#[derive(Debug, Default)]
pub struct Stages {
    tallies: [Tally; 7],
}

/// One stage's figures, as [`Stages::figures`] reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageFigures {
    /// The stage.
    pub stage: Stage,
    /// Threads that ran it (the caller's own thread counts once per stretch it spent there).
    pub threads: u64,
    /// CPU time of all its threads.
    pub cpu: Duration,
    /// CPU time of its busiest single thread.
    pub busiest: Duration,
    /// Time its threads waited on a hand-off: a bounded channel full or empty, a lock held.
    pub waited: Duration,
}

impl Stages {
    fn tally(&self, stage: Stage) -> &Tally {
        &self.tallies[stage as usize]
    }

    /// Counts a thread of `stage` that used `cpu`.
    pub fn add_thread(&self, stage: Stage, cpu: Duration) {
        let t = self.tally(stage);
        let ns = cpu.as_nanos() as u64;
        t.threads.fetch_add(1, Ordering::Relaxed);
        t.cpu_ns.fetch_add(ns, Ordering::Relaxed);
        t.busiest_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// Counts `d` waited on a hand-off by a thread of `stage`.
    pub fn add_wait(&self, stage: Stage, d: Duration) {
        let ns = d.as_nanos() as u64;
        if ns > 0 {
            self.tally(stage).waited_ns.fetch_add(ns, Ordering::Relaxed);
        }
    }

    /// A clock for the calling thread's work for `stage`: when dropped, the CPU time the
    /// thread used since is counted as one thread of the stage.
    pub fn clock(&self, stage: Stage) -> ThreadClock<'_> {
        ThreadClock {
            stages: self,
            stage,
            start: thread_cpu_time(),
        }
    }

    /// Every stage's figures so far, in [`Stage::ALL`]'s order.
    pub fn figures(&self) -> Vec<StageFigures> {
        let ns = |a: &AtomicU64| Duration::from_nanos(a.load(Ordering::Relaxed));
        Stage::ALL
            .iter()
            .map(|&stage| {
                let t = self.tally(stage);
                StageFigures {
                    stage,
                    threads: t.threads.load(Ordering::Relaxed),
                    cpu: ns(&t.cpu_ns),
                    busiest: ns(&t.busiest_ns),
                    waited: ns(&t.waited_ns),
                }
            })
            .collect()
    }
}

/// Counts the CPU time its thread used between its making and its drop (see [`Stages::clock`]).
#[derive(Debug)]
pub struct ThreadClock<'a> {
    stages: &'a Stages,
    stage: Stage,
    start: Duration,
}

impl Drop for ThreadClock<'_> {
    fn drop(&mut self) {
        let used = thread_cpu_time().saturating_sub(self.start);
        self.stages.add_thread(self.stage, used);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_threads_keeps_the_busiest_and_the_waits() {
        let s = Stages::default();
        s.add_thread(Stage::Read, Duration::from_millis(30));
        s.add_thread(Stage::Read, Duration::from_millis(50));
        s.add_thread(Stage::Read, Duration::from_millis(20));
        s.add_wait(Stage::Read, Duration::from_millis(7));
        s.add_wait(Stage::Read, Duration::from_millis(3));
        s.add_thread(Stage::Walk, Duration::from_millis(5));
        let f = s.figures();
        assert_eq!(f.len(), Stage::ALL.len());
        let read = f.iter().find(|f| f.stage == Stage::Read).unwrap();
        assert_eq!(read.threads, 3);
        assert_eq!(read.cpu, Duration::from_millis(100));
        assert_eq!(read.busiest, Duration::from_millis(50));
        assert_eq!(read.waited, Duration::from_millis(10));
        let walk = &f[0];
        assert_eq!((walk.stage, walk.threads), (Stage::Walk, 1));
        assert_eq!(walk.waited, Duration::ZERO);
        assert!(
            f[2..]
                .iter()
                .all(|f| f.stage == Stage::Read || f.threads == 0)
        );
    }

    #[test]
    fn a_clock_counts_its_threads_work_from_many_threads() {
        let s = Stages::default();
        std::thread::scope(|sc| {
            for _ in 0..3 {
                sc.spawn(|| {
                    let _c = s.clock(Stage::Lanes);
                    let t = std::time::Instant::now();
                    let mut x = 0u64;
                    while t.elapsed() < Duration::from_millis(20) {
                        x = std::hint::black_box(x.wrapping_add(1));
                    }
                });
            }
        });
        let lanes = s.figures()[3];
        assert_eq!((lanes.stage, lanes.threads), (Stage::Lanes, 3));
        // Each spun about 20 ms of CPU (less when the machine is busy, never more than its wall).
        assert!(lanes.busiest > Duration::ZERO && lanes.busiest <= lanes.cpu);
        assert!(lanes.cpu < Duration::from_secs(3));
    }
}
