//! Times as the catalog stores them (seconds since the Unix epoch) and prints them (RFC 3339),
//! and the one place "now" comes from: the system clock, or `TRAWL_NOW` where a test sets it.

use std::sync::OnceLock;

/// The environment variable that fixes "now" (seconds since the Unix epoch, a plain integer):
/// a testing aid, so that a test runs thirty nights of audits without waiting for them.
pub const NOW_VAR: &str = "TRAWL_NOW";

/// `TRAWL_NOW` is set to something other than a plain integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{NOW_VAR}='{value}': not a plain integer up to {LAST_TIME} (seconds since the Unix epoch; a testing aid that fixes the time audits record)"
)]
pub struct ClockError {
    /// What it was set to.
    pub value: String,
}

/// The last second RFC 3339 can write (9999-12-31T23:59:59Z): later times are shown as it.
pub const LAST_TIME: i64 = 253_402_300_799;

/// Parses a value of `TRAWL_NOW`: ASCII digits only (no sign, no space, no fraction), and no
/// later than [`LAST_TIME`] (a catalog's times are printed in RFC 3339, which ends there).
fn parse_now(value: &str) -> Result<i64, ClockError> {
    let bad = || ClockError {
        value: value.to_string(),
    };
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    value
        .parse()
        .ok()
        .filter(|t| *t <= LAST_TIME)
        .ok_or_else(bad)
}

/// The time `TRAWL_NOW` fixes (None: unset, the system clock rules). Read here alone.
pub fn fixed_now() -> Result<Option<i64>, ClockError> {
    match std::env::var_os(NOW_VAR) {
        None => Ok(None),
        Some(v) => match v.to_str() {
            Some(s) => parse_now(s).map(Some),
            None => Err(ClockError {
                value: v.to_string_lossy().into_owned(),
            }),
        },
    }
}

/// Seconds since the Unix epoch, now: `TRAWL_NOW` where set (read once per process; a value
/// that is not a plain integer is refused by the command before it gets here, see
/// [`fixed_now`]), else the system clock.
pub fn now_secs() -> i64 {
    static FIXED: OnceLock<Option<i64>> = OnceLock::new();
    if let Some(t) = FIXED.get_or_init(|| fixed_now().ok().flatten()) {
        return *t;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A Unix time as `2026-11-22T12:00:00Z` (one before the epoch as the epoch, one after
/// 9999-12-31T23:59:59Z as it: RFC 3339 has four digits of year).
pub fn format_time(secs: i64) -> String {
    let secs = secs.clamp(0, LAST_TIME) as u64;
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
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
        assert_eq!(format_time(LAST_TIME), "9999-12-31T23:59:59Z");
        assert_eq!(format_time(i64::MAX), "9999-12-31T23:59:59Z");
    }

    /// `TRAWL_NOW` is digits and nothing else: a sign, a space, a fraction, a unit or a
    /// number past i64 are each refused, naming the value.
    #[test]
    fn a_fixed_now_is_a_plain_integer() {
        assert_eq!(parse_now("0"), Ok(0));
        assert_eq!(parse_now("1795000000"), Ok(1_795_000_000));
        assert_eq!(parse_now("253402300799"), Ok(LAST_TIME));
        for bad in [
            "",
            " 1",
            "1 ",
            "-1",
            "+1",
            "1.5",
            "1e9",
            "10s",
            "99999999999999999999",
            "253402300800",
            "9223372036854775807",
        ] {
            let e = parse_now(bad).unwrap_err();
            assert_eq!(e.value, bad);
            assert!(e.to_string().contains("not a plain integer"), "{e}");
        }
    }
}
