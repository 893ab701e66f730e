//! Inserts N random 64-bit fingerprints (a fraction repeated) into trawl's FpTable (staged,
//! merged in sorted batches) and into a std HashMap<u128, u32> (what one writes first), on one
//! thread; prints inserts per second and bytes per distinct key: of RSS at the end, and of peak
//! RSS while inserting (the staging is full just before a flush). Driven by bench/table.py.
//!
//!     table_bench N DUP_PERCENT

use std::collections::HashMap;
use std::time::Instant;

use trawl_reduce::bench::{FpTable, stage_word};

#[path = "common/keys.rs"]
mod keys;

fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 4096
}

/// Resets the process's peak RSS to its current RSS (Linux 4.0+; a no-op where refused).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// Peak RSS (VmHWM) in bytes.
fn peak() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .unwrap_or(0)
        * 1024
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let keys = keys::from_args(&args);
    let n = keys.len();
    let which = args.get(3).map(String::as_str).unwrap_or("both");
    reset_peak();
    let base = rss();
    if which != "hashmap" {
        let mut t = FpTable::new();
        let mut new = 0u64;
        let t0 = Instant::now();
        // Staged one by one as a scan does; each key that turns out new is reported at a flush.
        for &k in &keys {
            if t.is_full() {
                t.flush(&mut |_| new += 1);
            }
            t.stage(stage_word(k, 0));
        }
        t.flush(&mut |_| new += 1);
        assert_eq!(new, t.distinct());
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "fptable  keys {n} distinct {} seconds {dt:.3} inserts_per_s {:.1}M table_bytes_per_distinct {:.2} rss_bytes_per_distinct {:.2} peak_rss_bytes_per_distinct {:.2}",
            t.distinct(),
            n as f64 / dt / 1e6,
            t.memory_bytes() as f64 / t.distinct() as f64,
            (rss().saturating_sub(base)) as f64 / t.distinct() as f64,
            (peak().saturating_sub(base)) as f64 / t.distinct() as f64
        );
        drop(t);
    }
    if which != "fptable" {
        reset_peak();
        let base = rss();
        let mut m: HashMap<u128, u32> = HashMap::new();
        let t0 = Instant::now();
        for &k in &keys {
            *m.entry(((k as u128) << 64) | k as u128).or_insert(0) += 1;
        }
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "hashmap  keys {n} distinct {} seconds {dt:.3} inserts_per_s {:.1}M rss_bytes_per_distinct {:.2} peak_rss_bytes_per_distinct {:.2}",
            m.len(),
            n as f64 / dt / 1e6,
            (rss().saturating_sub(base)) as f64 / m.len() as f64,
            (peak().saturating_sub(base)) as f64 / m.len() as f64
        );
    }
}
