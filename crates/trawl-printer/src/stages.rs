//! Where a scan's CPU went (`--stats`), as a table: a row per stage, then the busiest thread.

use trawl_report::StagesJson;

/// `s` as a table.
pub fn stages_table(s: &StagesJson) -> String {
    let mut out = format!(
        "stages: {:.2} s CPU in {:.2} s\n  {:<7} {:>7} {:>9} {:>6} {:>12} {:>7} {:>9}\n",
        s.cpu_seconds,
        s.seconds,
        "stage",
        "threads",
        "CPU s",
        "share",
        "busiest s",
        "share",
        "wait s"
    );
    for r in &s.stages {
        out.push_str(&format!(
            "  {:<7} {:>7} {:>9.3} {:>5.1}% {:>12.3} {:>6.1}% {:>9.3}\n",
            r.stage,
            r.threads,
            r.cpu_seconds,
            100.0 * r.share,
            r.busiest_cpu_seconds,
            100.0 * r.busiest_share,
            r.wait_seconds
        ));
    }
    out.push_str(&format!(
        "  busiest thread: {} ({:.1}% of the CPU; above 1/N it caps the speed-up on N cores)\n",
        s.busiest_stage,
        100.0 * s.busiest_share
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_per_stage_and_the_busiest_named() {
        let s = StagesJson::new(
            &[("walk", 2, 1.0, 0.5, 0.25), ("read", 4, 3.0, 1.0, 0.0)],
            2.0,
            4.0,
        );
        let t = stages_table(&s);
        assert!(
            t.contains("  walk          2     1.000  25.0%        0.500   12.5%     0.250\n"),
            "{t}"
        );
        assert!(t.contains("busiest thread: read (25.0% of the CPU"), "{t}");
    }
}
