//! A policy's values as flags give them: periods and budgets (refused where zero, which no
//! policy can mean), and times of day.

use std::time::Duration;

use anyhow::{Context, bail};
use trawl_catalog::LONGEST;

/// Parses durations like `30d`, `2h`, `90s`, `1h 30m`.
pub fn parse_duration(flag: &str, s: &str) -> anyhow::Result<Duration> {
    humantime::parse_duration(s.trim())
        .with_context(|| format!("{flag} '{s}': expected a duration like 30d, 12h, 90s"))
}

/// A duration of at least a second and at most [`LONGEST`]: a policy's period or time budget.
pub fn positive_duration(flag: &str, s: &str) -> anyhow::Result<Duration> {
    let d = parse_duration(flag, s)?;
    if d.as_secs() == 0 {
        bail!("{flag} '{s}': must be at least a second");
    }
    if d > LONGEST {
        bail!("{flag} '{s}': must be at most 100 years");
    }
    Ok(d)
}

/// A size of at least a byte: a policy's byte budget.
pub fn positive_size(flag: &str, s: &str) -> anyhow::Result<u64> {
    let n = super::hiargs::parse_size(s).with_context(|| flag.to_string())?;
    if n == 0 {
        bail!("{flag} '{s}': must be at least a byte (leave it out for no byte budget)");
    }
    Ok(n)
}

/// A time of day `HH:MM` (00:00 to 23:59): hours and minutes.
pub fn clock_time(flag: &str, s: &str) -> anyhow::Result<(u32, u32)> {
    let parsed = s.split_once(':').and_then(|(h, m)| {
        let ok =
            |x: &str, n: usize| (1..=n).contains(&x.len()) && x.bytes().all(|b| b.is_ascii_digit());
        if !ok(h, 2) || m.len() != 2 || !ok(m, 2) {
            return None;
        }
        let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
        (h < 24 && m < 60).then_some((h, m))
    });
    parsed.with_context(|| format!("{flag} '{s}': expected a time of day HH:MM, e.g. 02:00"))
}

/// A period in its largest whole unit, as the flags take it: `30d`, `36h`, `90m`, `45s`.
pub fn show_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0 => "0s".into(),
        _ if s.is_multiple_of(86_400) => format!("{}d", s / 86_400),
        _ if s.is_multiple_of(3600) => format!("{}h", s / 3600),
        _ if s.is_multiple_of(60) => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Zero is no period and no budget, nor is more than a hundred years: refused, as is a
    /// time of day past 23:59.
    #[test]
    fn zero_and_times_past_the_day_are_refused() {
        assert_eq!(
            positive_duration("--every", "30d").unwrap().as_secs(),
            30 * 86_400
        );
        for bad in [
            "0s",
            "0d",
            "",
            "-1d",
            "nan",
            "inf",
            "1x",
            "101y",
            "18446744073709551615s",
        ] {
            assert!(positive_duration("--every", bad).is_err(), "{bad}");
        }
        assert_eq!(
            positive_duration("--every", "100y").unwrap(),
            Duration::from_secs(3_155_760_000)
        );
        assert_eq!(positive_size("--max-bytes", "1K").unwrap(), 1024);
        for bad in ["0", "0G", "-1", "nan", "inf"] {
            assert!(positive_size("--max-bytes", bad).is_err(), "{bad}");
        }
        assert_eq!(show_duration(Duration::from_secs(90 * 86_400)), "90d");
        assert_eq!(show_duration(Duration::from_secs(36 * 3600)), "36h");
        assert_eq!(show_duration(Duration::from_secs(5400)), "90m");
        assert_eq!(show_duration(Duration::from_secs(61)), "61s");
        assert_eq!(clock_time("--at", "02:00").unwrap(), (2, 0));
        assert_eq!(clock_time("--at", "7:05").unwrap(), (7, 5));
        for bad in ["24:00", "02:60", "2", "02:0", "02:000", "-1:00", "02:00:00"] {
            assert!(clock_time("--at", bad).is_err(), "{bad}");
        }
    }
}
