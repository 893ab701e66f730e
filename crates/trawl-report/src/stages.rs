//! Where a scan's CPU went, by stage (`trawl scan --stats`): each stage's threads, CPU time and
//! waits, and its busiest single thread's share of the whole run's CPU.

use serde::{Deserialize, Serialize};

/// The `stages` object of a scan report.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StagesJson {
    /// The run's wall time: from the scan's start to the figures taken, outputs written.
    pub seconds: f64,
    /// The process's CPU time (user and system, every thread) when the figures were taken.
    pub cpu_seconds: f64,
    /// The stage whose single busiest thread took the most CPU.
    pub busiest_stage: String,
    /// That thread's CPU over `cpu_seconds`: above 1/N, it caps the speed-up on N cores.
    pub busiest_share: f64,
    /// Every stage, in the order a scan runs them.
    pub stages: Vec<StageRow>,
}

/// One stage's figures.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageRow {
    /// `walk`, `order`, `read`, `lanes`, `reduce`, `merge` or `output`.
    pub stage: String,
    /// Threads that ran it.
    pub threads: u64,
    /// CPU time of all its threads.
    pub cpu_seconds: f64,
    /// `cpu_seconds` over the run's.
    pub share: f64,
    /// CPU time of its busiest single thread.
    pub busiest_cpu_seconds: f64,
    /// `busiest_cpu_seconds` over the run's CPU.
    pub busiest_share: f64,
    /// Time its threads waited on a hand-off (a channel full or empty, a lock held).
    pub wait_seconds: f64,
}

impl StagesJson {
    /// The report from each stage's `(name, threads, cpu, busiest, waited)` in seconds, the
    /// run's wall time and the process's CPU time.
    pub fn new(rows: &[(&str, u64, f64, f64, f64)], seconds: f64, cpu_seconds: f64) -> Self {
        let share = |x: f64| {
            if cpu_seconds > 0.0 {
                x / cpu_seconds
            } else {
                0.0
            }
        };
        let stages: Vec<StageRow> = rows
            .iter()
            .map(|&(stage, threads, cpu, busiest, waited)| StageRow {
                stage: stage.to_string(),
                threads,
                cpu_seconds: cpu,
                share: share(cpu),
                busiest_cpu_seconds: busiest,
                busiest_share: share(busiest),
                wait_seconds: waited,
            })
            .collect();
        let top = stages
            .iter()
            .max_by(|a, b| a.busiest_cpu_seconds.total_cmp(&b.busiest_cpu_seconds));
        StagesJson {
            seconds,
            cpu_seconds,
            busiest_stage: top.map(|r| r.stage.clone()).unwrap_or_default(),
            busiest_share: top.map_or(0.0, |r| r.busiest_share),
            stages,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_of_the_whole_run_and_the_busiest_thread_named() {
        let s = StagesJson::new(
            &[("walk", 2, 1.0, 0.6, 0.5), ("read", 4, 4.0, 1.5, 0.0)],
            3.0,
            8.0,
        );
        assert_eq!(s.busiest_stage, "read");
        assert_eq!(s.busiest_share, 1.5 / 8.0);
        assert_eq!(s.stages[0].share, 1.0 / 8.0);
        assert_eq!(s.stages[0].busiest_share, 0.6 / 8.0);
        let none = StagesJson::new(&[("walk", 0, 0.0, 0.0, 0.0)], 0.0, 0.0);
        assert_eq!(none.stages[0].share, 0.0);
    }
}
