//! Human-readable numbers.

/// `1536` -> `1.5 KiB`.
pub fn human_bytes(n: u64) -> String {
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

/// Bytes per second in the same binary units as [`human_bytes`] (`512.0 MiB/s`).
pub fn human_rate(bytes: u64, secs: f64) -> String {
    if secs <= 0.0 {
        return "-".into();
    }
    format!("{}/s", human_bytes((bytes as f64 / secs) as u64))
}

/// `75` -> `1m15s`; `3725` -> `1h02m`.
pub fn human_duration(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `1234567` -> `1,234,567`.
pub fn grouped_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `1 file`, `2 files`.
pub fn human_count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A ratio as `2.31:1`, or `-` when there is none; an estimate with its interval and confidence:
/// `1.02:1 (0.97-1.09, 99%)` (a point estimate is never shown alone).
pub fn human_ratio(
    v: Option<f64>,
    interval: Option<(f64, f64)>,
    confidence: Option<f64>,
) -> String {
    human_estimate(v, interval, confidence, ":1")
}

/// A ratio written with `unit` after each figure (`:1` in text, `x` on a page), and its
/// interval and confidence when it is an estimate; `-` when there is none.
pub fn human_estimate(
    v: Option<f64>,
    interval: Option<(f64, f64)>,
    confidence: Option<f64>,
    unit: &str,
) -> String {
    let Some(r) = v else {
        return "-".into();
    };
    match interval {
        None => format!("{r:.2}{unit}"),
        Some((lo, hi)) => {
            let hi = if hi >= f64::MAX / 2.0 {
                "inf".to_string()
            } else {
                format!("{hi:.2}")
            };
            format!(
                "{r:.2}{unit} ({lo:.2}-{hi}, {:.0}%)",
                confidence.unwrap_or(0.99) * 100.0
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_rate(2 << 20, 1.0), "2.0 MiB/s");
        assert_eq!(human_duration(75.0), "1m15s");
        assert_eq!(human_duration(3725.0), "1h02m");
        assert_eq!(human_count(1, "file", "files"), "1 file");
        assert_eq!(human_count(2, "file", "files"), "2 files");
    }
}
