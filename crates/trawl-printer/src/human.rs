//! Human-readable numbers.

/// `1536` -> `1.5 KiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Decimal megabytes per second, the unit the benchmarks use.
pub fn rate(bytes: u64, secs: f64) -> String {
    if secs <= 0.0 {
        return "-".into();
    }
    format!("{:.0} MB/s", bytes as f64 / secs / 1e6)
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats() {
        assert_eq!(super::bytes(10), "10 B");
        assert_eq!(super::bytes(1536), "1.5 KiB");
        assert_eq!(super::rate(2_000_000, 1.0), "2 MB/s");
    }
}
