//! A scan's CPU by stage, as the report's `stages` object: each stage's figures set against the
//! process's CPU time when they are taken.

use trawl_report::StagesJson;
use trawl_scan::Stages;

/// The report of `stages`, `seconds` into the run, with the process's CPU time now.
pub fn stages_report(stages: &Stages, seconds: f64) -> StagesJson {
    let figures = stages.figures();
    let rows: Vec<(&str, u64, f64, f64, f64)> = figures
        .iter()
        .map(|f| {
            let (cpu, busiest) = (f.cpu.as_secs_f64(), f.busiest.as_secs_f64());
            (
                f.stage.name(),
                f.threads,
                cpu,
                busiest,
                f.waited.as_secs_f64(),
            )
        })
        .collect();
    StagesJson::new(&rows, seconds, trawl_scan::process_cpu_time().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use trawl_scan::Stage;

    #[test]
    fn every_stage_is_reported_within_the_process_cpu() {
        let s = Stages::default();
        {
            let _c = s.clock(Stage::Merge);
            let mut x = 0u64;
            for i in 0..2_000_000u64 {
                x = std::hint::black_box(x ^ i);
            }
        }
        s.add_wait(Stage::Read, Duration::from_millis(2));
        let r = stages_report(&s, 1.0);
        let names: Vec<&str> = r.stages.iter().map(|r| r.stage.as_str()).collect();
        assert_eq!(
            names,
            [
                "walk", "order", "read", "lanes", "reduce", "merge", "output"
            ]
        );
        let sum: f64 = r.stages.iter().map(|r| r.cpu_seconds).sum();
        assert!(sum > 0.0 && sum <= r.cpu_seconds);
        assert_eq!(r.busiest_stage, "merge");
        assert_eq!(r.stages[2].wait_seconds, 0.002);
    }
}
