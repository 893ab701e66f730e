//! A collection's policy, kept in its catalog: how often every file must be read, how much
//! one run may read, and when runs may start; and what is due against it.
//!
//! A file is due when it is present and its last verification (the last read that found its
//! content as registered) is older than the period, or it was never verified. A corrupt file
//! keeps the verification it had before it went bad, so once due it stays due until an audit
//! reads it restored. The policy is not part of the chain's seal: it chooses what a run reads,
//! and each run records in its sealed options what it was given.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{OptionalExtension, params};

use crate::{Catalog, CatalogError, Result};

/// How often every file must be read, how much one run may read, and when runs may start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Every file is read at least this often.
    pub every: Duration,
    /// One run starts no file after this many bytes.
    pub max_bytes: Option<u64>,
    /// One run starts no file after this long.
    pub max_time: Option<Duration>,
    /// Runs start only within this time of day (local time).
    pub window: Option<Window>,
}

/// A time of day runs may start in, local time: from `start` (included) to `end` (excluded),
/// in minutes after midnight; past midnight where `end` is before `start` (`22:00-06:00`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    start: u32,
    end: u32,
}

/// A `--window` that is not `HH:MM-HH:MM`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("window '{given}': {why}")]
pub struct WindowError {
    /// What was given.
    pub given: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// `HH:MM` (an hour 0-24, two-digit minutes) as minutes after midnight; 24:00 only if `end`.
fn minute_of(s: &str, end: bool) -> Option<u32> {
    let (h, m) = s.split_once(':')?;
    let digits = |x: &str, n: std::ops::RangeInclusive<usize>| {
        n.contains(&x.len()) && x.bytes().all(|b| b.is_ascii_digit())
    };
    if !digits(h, 1..=2) || !digits(m, 2..=2) {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    match (h, m) {
        (24, 0) if end => Some(24 * 60),
        (0..=23, 0..=59) => Some(h * 60 + m),
        _ => None,
    }
}

impl Window {
    /// Parses `HH:MM-HH:MM` (local time; `22:00-06:00` runs past midnight, `00:00-24:00` is the
    /// whole day). A window that starts where it ends holds no time and is refused.
    pub fn parse(s: &str) -> std::result::Result<Window, WindowError> {
        let err = |why| WindowError {
            given: s.to_string(),
            why,
        };
        let (a, b) = s
            .trim()
            .split_once('-')
            .ok_or_else(|| err("expected HH:MM-HH:MM, e.g. 01:00-06:00 (local time)"))?;
        let start = minute_of(a.trim(), false)
            .ok_or_else(|| err("expected HH:MM-HH:MM, e.g. 01:00-06:00 (local time)"))?;
        let end = minute_of(b.trim(), true)
            .ok_or_else(|| err("expected HH:MM-HH:MM, e.g. 01:00-06:00 (local time)"))?;
        if start == end % (24 * 60) && end != 24 * 60 {
            return Err(err(
                "it starts where it ends, so it holds no time (leave --window out: any time)",
            ));
        }
        Ok(Window { start, end })
    }

    /// Whether `minute` (after local midnight) is inside the window.
    pub fn contains(&self, minute: u32) -> bool {
        if self.start < self.end {
            (self.start..self.end).contains(&minute)
        } else {
            minute >= self.start || minute < self.end
        }
    }

    /// Its start, in hours and minutes.
    pub fn start(&self) -> (u32, u32) {
        (self.start / 60, self.start % 60)
    }

    /// Whether the Unix time `secs` falls inside the window, in the local time zone.
    pub fn holds(&self, secs: i64) -> bool {
        self.contains(local_minute(secs))
    }
}

impl std::fmt::Display for Window {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (s, e) = (self.start, self.end);
        write!(f, "{:02}:{:02}-{:02}:{:02}", s / 60, s % 60, e / 60, e % 60)
    }
}

/// The minute of the local day (the `TZ` environment variable's zone, else the system's) at
/// the Unix time `secs`; UTC's where the time cannot be converted.
pub fn local_minute(secs: i64) -> u32 {
    let t = secs as libc::time_t;
    // SAFETY: an all-zero `tm` is a valid value of the plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r reads `t` and writes only into `tm`, both ours and valid.
    let r = unsafe { libc::localtime_r(&t, &mut tm) };
    if r.is_null() {
        return (secs.rem_euclid(86_400) / 60) as u32;
    }
    (tm.tm_hour * 60 + tm.tm_min) as u32
}

/// Files and bytes that are due.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DueTotals {
    /// How many files.
    pub files: u64,
    /// Their sizes, added up.
    pub bytes: u64,
}

/// One file that is due.
#[derive(Debug, Clone)]
pub struct DueFile {
    /// The file: its root joined with its path below it.
    pub path: PathBuf,
    /// Its registered size.
    pub size: u64,
    /// When an audit last found its content as registered (None: never).
    pub last_verified: Option<i64>,
    /// Its state (`ok`, `corrupt`, `unreadable`, ...).
    pub state: String,
}

/// The due files' `FROM` and `WHERE`: present, and never verified, verified before `?1`, or
/// verified after now (`?2`): a time a clock gone wrong recorded vouches for nothing, and
/// would otherwise keep the file from being read until the clock caught up with it.
const DUE_FROM: &str = "FROM file_paths f JOIN roots r ON r.id = f.root
     WHERE f.present = 1
       AND (f.last_verified IS NULL OR f.last_verified < ?1 OR f.last_verified > ?2)";

/// A value a policy's column holds, as a message names it.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Integer(n) => n.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Text(t) => format!("'{}'", t.escape_debug()),
        Value::Blob(b) => format!("a blob of {} bytes", b.len()),
    }
}

/// The time before which a verification is stale at `now`, for the period `age`.
/// The longest period or time budget a policy holds: a hundred years (365.25 days each).
/// Longer is no policy a catalog could keep (its times end with year 9999), and a value past
/// 2^63 seconds would not fit its integer columns. The flags refuse more; so does reading a
/// stored policy, where only a hand could have put it.
pub const LONGEST: Duration = Duration::from_secs(100 * 31_557_600);

fn cutoff(now: i64, age: Duration) -> i64 {
    now.saturating_sub(i64::try_from(age.as_secs()).unwrap_or(i64::MAX))
}

impl Catalog {
    /// Whether this catalog has the policy table (schema 3; a schema-2 catalog opened to be
    /// read has none, and so no policy).
    fn has_policy_table(&self) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'policy'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// The collection's policy, if one is set. A row no command could have written (edited
    /// by hand: a period of 0, a negative budget, text where a number goes, a window that does
    /// not parse) is [`CatalogError::BadPolicy`], saying what.
    pub fn policy(&self) -> Result<Option<Policy>> {
        if !self.has_policy_table()? {
            return Ok(None);
        }
        // Each column as whatever SQLite holds: its type is the row's, not the schema's.
        let row: Option<[Value; 4]> = self
            .conn
            .query_row(
                "SELECT every, max_bytes, max_time, window FROM policy WHERE id = 1",
                [],
                |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?]),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some([every, max_bytes, max_time, window]) = row else {
            return Ok(None);
        };
        let bad = |what: String| CatalogError::BadPolicy {
            path: self.path.clone(),
            what,
        };
        let positive = |v: Value, name: &str| match v {
            Value::Null => Ok(None),
            Value::Integer(n) if n > 0 => Ok(Some(n as u64)),
            Value::Integer(n) => Err(bad(format!("{name} is {n}"))),
            other => Err(bad(format!(
                "{name} is {}, not a whole number",
                shown(&other)
            ))),
        };
        // A period or time budget in seconds, at most [`LONGEST`].
        let seconds = |v: Value, name: &str| match positive(v, name)? {
            Some(s) if s > LONGEST.as_secs() => {
                Err(bad(format!("{name} is {s} seconds, more than 100 years")))
            }
            s => Ok(s.map(Duration::from_secs)),
        };
        let every = seconds(every, "every")?.ok_or_else(|| bad("every is NULL".into()))?;
        let window = match window {
            Value::Null => None,
            Value::Text(w) => Some(Window::parse(&w).map_err(|e| bad(e.to_string()))?),
            other => return Err(bad(format!("window is {}, not HH:MM-HH:MM", shown(&other)))),
        };
        Ok(Some(Policy {
            every,
            max_bytes: positive(max_bytes, "max_bytes")?,
            max_time: seconds(max_time, "max_time")?,
            window,
        }))
    }

    /// Sets the collection's policy (replacing the one there was), recording when.
    pub fn set_policy(&self, p: &Policy, now: i64) -> Result<()> {
        let secs = |d: Duration| i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
        self.conn
            .execute(
                "INSERT OR REPLACE INTO policy(id, every, max_bytes, max_time, window, set_at)
                 VALUES (1, ?1, ?2, ?3, ?4, ?5)",
                params![
                    secs(p.every),
                    p.max_bytes.map(|b| i64::try_from(b).unwrap_or(i64::MAX)),
                    p.max_time.map(secs),
                    p.window.map(|w| w.to_string()),
                    now
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Removes the collection's policy; whether there was one.
    pub fn clear_policy(&self) -> Result<bool> {
        if !self.has_policy_table()? {
            return Ok(false);
        }
        self.conn
            .execute("DELETE FROM policy", [])
            .map(|n| n > 0)
            .map_err(|e| self.err(e))
    }

    /// The files and bytes due at `now` for the period `age`: present files never verified
    /// or last verified more than `age` before `now`.
    pub fn due_totals(&self, now: i64, age: Duration) -> Result<DueTotals> {
        let (files, bytes): (i64, i64) = self
            .conn
            .query_row(
                &format!("SELECT count(*), coalesce(sum(f.size), 0) {DUE_FROM}"),
                [cutoff(now, age), now],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .map_err(|e| self.err(e))?;
        Ok(DueTotals {
            files: files as u64,
            bytes: bytes as u64,
        })
    }

    /// Hands each file due at `now` for the period `age` to `f`, oldest verification first
    /// (never verified before all), then by root and path; their totals.
    pub fn for_each_due(
        &self,
        now: i64,
        age: Duration,
        f: &mut dyn FnMut(&DueFile),
    ) -> Result<DueTotals> {
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT r.path, f.path, f.size, f.last_verified, f.state {DUE_FROM}
                 ORDER BY CASE WHEN f.last_verified > ?2 THEN NULL ELSE f.last_verified END,
                          r.path, f.path"
            ))
            .map_err(|e| self.err(e))?;
        let mut rows = st.query([cutoff(now, age), now]).map_err(|e| self.err(e))?;
        let mut totals = DueTotals::default();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            let get = |r: &rusqlite::Row<'_>| -> rusqlite::Result<DueFile> {
                let root: Vec<u8> = r.get(0)?;
                let rel: Vec<u8> = r.get(1)?;
                let root = PathBuf::from(std::ffi::OsStr::from_bytes(&root));
                Ok(DueFile {
                    path: root.join(std::ffi::OsStr::from_bytes(&rel)),
                    size: r.get::<_, i64>(2)? as u64,
                    last_verified: r.get(3)?,
                    state: r.get(4)?,
                })
            };
            let file = get(r).map_err(|e| self.err(e))?;
            totals.files += 1;
            totals.bytes += file.size;
            f(&file);
        }
        Ok(totals)
    }
}

#[cfg(test)]
mod tests;
