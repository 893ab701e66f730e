//! Times as the catalog stores them (seconds since the Unix epoch) and prints them (RFC 3339).

/// Seconds since the Unix epoch, now.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A Unix time as `2026-11-22T12:00:00Z`.
pub fn format_time(secs: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times as `date -u -d @SECONDS +%FT%TZ` prints them; a time before the epoch is the epoch.
    #[test]
    fn times_are_rfc_3339_in_utc() {
        assert_eq!(format_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_time(1_000_000_000), "2001-09-09T01:46:40Z");
        assert_eq!(format_time(1_709_208_000), "2024-02-29T12:00:00Z");
        assert_eq!(format_time(-5), "1970-01-01T00:00:00Z");
    }
}
