//! A verification's report: each manifest entry with its state, and the files the manifest
//! does not list (with `--strict`).

use serde::Serialize;
use std::ops::ControlFlow;

/// What became of one listed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyState {
    /// Read, and every digest (and the size, where listed) matches.
    Ok,
    /// Read, and a digest or the size differs (which one is said).
    Failed(String),
    /// Not found.
    Missing,
    /// Could not be opened or read (why is said).
    Unreadable(String),
    /// Read or not, not checked: the digest's algorithm is not known or not computed (why is
    /// said). Never a verdict on the file's content.
    Unverified(String),
}

/// One manifest entry, by its name in the manifest. Written as `{path, [path_hex,] line,
/// state, detail}`, `path` as in every other report.
#[derive(Debug, Clone)]
pub struct VerifyEntry {
    /// Its name as the manifest writes it.
    pub name: Vec<u8>,
    /// Its line in the manifest.
    pub line: usize,
    /// What became of it.
    pub state: VerifyState,
}

impl Serialize for VerifyEntry {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        use std::os::unix::ffi::OsStrExt;
        let p = crate::JsonPath::new(std::path::Path::new(std::ffi::OsStr::from_bytes(
            &self.name,
        )));
        let (state, detail) = match &self.state {
            VerifyState::Ok => ("ok", None),
            VerifyState::Failed(d) => ("failed", Some(d)),
            VerifyState::Missing => ("missing", None),
            VerifyState::Unreadable(d) => ("unreadable", Some(d)),
            VerifyState::Unverified(d) => ("unverified", Some(d)),
        };
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("path", &p.path)?;
        if let Some(h) = &p.path_hex {
            m.serialize_entry("path_hex", h)?;
        }
        m.serialize_entry("line", &self.line)?;
        m.serialize_entry("state", state)?;
        m.serialize_entry("detail", &detail)?;
        m.end()
    }
}

/// The entries of a report, in manifest order: a list in RAM, or a source that reads them back
/// from disk each time they are gone through (a manifest of 10^8 lines is never held).
pub struct VerifyEntries(Entries);

/// Goes through the entries once, calling the function with each until it breaks; an error
/// is the entries' own (they could not be read back).
pub type EntrySource = Box<
    dyn Fn(&mut dyn FnMut(&VerifyEntry) -> ControlFlow<()>) -> std::io::Result<()> + Send + Sync,
>;

enum Entries {
    InRam(Vec<VerifyEntry>),
    Source(EntrySource),
}

impl VerifyEntries {
    /// Entries held in RAM.
    pub fn new(v: Vec<VerifyEntry>) -> VerifyEntries {
        VerifyEntries(Entries::InRam(v))
    }

    /// Entries read back from where they wait, as they are passed over.
    pub fn source(s: EntrySource) -> VerifyEntries {
        VerifyEntries(Entries::Source(s))
    }

    /// Calls `f` with each entry in manifest order until it breaks: `Break` with its value
    /// then, `Continue` once every entry was seen; an error only when the entries could not be
    /// read back.
    pub fn try_for_each<B>(
        &self,
        mut f: impl FnMut(&VerifyEntry) -> ControlFlow<B>,
    ) -> std::io::Result<ControlFlow<B>> {
        let mut broke = None;
        let mut visit = |e: &VerifyEntry| match f(e) {
            ControlFlow::Continue(()) => ControlFlow::Continue(()),
            ControlFlow::Break(b) => {
                broke = Some(b);
                ControlFlow::Break(())
            }
        };
        match &self.0 {
            Entries::InRam(v) => {
                for e in v {
                    if visit(e).is_break() {
                        break;
                    }
                }
            }
            Entries::Source(s) => s(&mut visit)?,
        }
        Ok(broke.map_or(ControlFlow::Continue(()), ControlFlow::Break))
    }
}

impl Default for VerifyEntries {
    fn default() -> VerifyEntries {
        VerifyEntries::new(Vec::new())
    }
}

impl std::fmt::Debug for VerifyEntries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Entries::InRam(v) => f.debug_list().entries(v).finish(),
            Entries::Source(_) => f.write_str("VerifyEntries(on disk)"),
        }
    }
}

impl Serialize for VerifyEntries {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeSeq};
        let mut seq = s.serialize_seq(None)?;
        let r = self.try_for_each(|e| match seq.serialize_element(e) {
            Ok(()) => ControlFlow::Continue(()),
            Err(x) => ControlFlow::Break(x),
        });
        if let ControlFlow::Break(e) = r.map_err(S::Error::custom)? {
            return Err(e);
        }
        seq.end()
    }
}

/// Everything a verification found.
#[derive(Debug, Default, Serialize)]
pub struct VerifyReport {
    /// Each entry with its state, in manifest order.
    pub entries: VerifyEntries,
    /// How many entries are in each state.
    #[serde(skip)]
    pub counts: VerifyCounts,
    /// Files under the root that the manifest does not list (`--strict` only), sorted.
    #[serde(serialize_with = "crate::bytes_list_as_paths")]
    pub not_listed: Vec<Vec<u8>>,
    /// Whether files the manifest does not list were looked for.
    pub strict: bool,
    /// Manifest lines that were refused or malformed (each already reported with its line).
    pub manifest_problems: usize,
    /// Of those, the lines that are no checksum lines at all (as `sha256sum -c` calls them,
    /// improperly formatted); the others name a file that was refused.
    pub malformed_lines: usize,
    /// Listed files that do not exist, left out with `--ignore-missing`.
    pub missing_ignored: u64,
}

/// `verify --json`: the entries and the totals.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyJson<'a> {
    /// The layout's version ([`crate::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The trawl that wrote it.
    pub trawl_version: &'a str,
    /// The manifest.
    #[serde(serialize_with = "crate::bytes_as_path")]
    pub manifest: Vec<u8>,
    /// The root its names were resolved under.
    #[serde(serialize_with = "crate::bytes_as_path")]
    pub root: Vec<u8>,
    /// Counts by state.
    pub totals: VerifyTotals,
    /// Each entry with its state.
    pub entries: &'a VerifyEntries,
    /// Files the manifest does not list (`--strict`).
    #[serde(serialize_with = "crate::bytes_list_as_paths")]
    pub not_listed: &'a [Vec<u8>],
}

/// Counts by state, as `verify --json` writes them.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct VerifyTotals {
    /// Entries in the manifest.
    pub listed: u64,
    /// Matching.
    pub ok: u64,
    /// Differing.
    pub failed: u64,
    /// Not found.
    pub missing: u64,
    /// Found and not readable.
    pub unreadable: u64,
    /// Not checked: the digest's algorithm not known or not computed.
    pub unverified: u64,
    /// Found and not listed (`--strict`).
    pub not_listed: u64,
    /// Not found, left out by `--ignore-missing`.
    pub missing_ignored: u64,
    /// Manifest lines refused.
    pub manifest_problems: u64,
    /// Of those, the lines that are no checksum lines at all.
    pub malformed_lines: u64,
}

impl VerifyReport {
    /// The counts, as `verify --json` writes them.
    pub fn totals(&self) -> VerifyTotals {
        let c = self.counts();
        VerifyTotals {
            listed: self.listed(),
            ok: c.ok,
            failed: c.failed,
            missing: c.missing,
            unreadable: c.unreadable,
            unverified: c.unverified,
            not_listed: self.not_listed.len() as u64,
            missing_ignored: self.missing_ignored,
            manifest_problems: self.manifest_problems as u64,
            malformed_lines: self.malformed_lines as u64,
        }
    }
}

/// Counts by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifyCounts {
    /// Matching.
    pub ok: u64,
    /// Differing.
    pub failed: u64,
    /// Not found.
    pub missing: u64,
    /// Found and not readable.
    pub unreadable: u64,
    /// Not checked.
    pub unverified: u64,
}

impl VerifyReport {
    /// Counts by state.
    pub fn counts(&self) -> VerifyCounts {
        self.counts
    }

    /// How many entries the report has.
    pub fn listed(&self) -> u64 {
        let c = self.counts;
        c.ok + c.failed + c.missing + c.unreadable + c.unverified
    }
}

impl VerifyCounts {
    /// Counts one more entry in `state`.
    pub fn add(&mut self, state: &VerifyState) {
        match state {
            VerifyState::Ok => self.ok += 1,
            VerifyState::Failed(_) => self.failed += 1,
            VerifyState::Missing => self.missing += 1,
            VerifyState::Unreadable(_) => self.unreadable += 1,
            VerifyState::Unverified(_) => self.unverified += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: usize) -> VerifyEntry {
        VerifyEntry {
            name: format!("f{n}").into_bytes(),
            line: n,
            state: VerifyState::Ok,
        }
    }

    /// A pass stops where the caller breaks, with the caller's value, in RAM and from a source
    /// alike; the source's own error is an error, not a stop.
    #[test]
    fn a_pass_over_the_entries_stops_with_the_callers_value() {
        let in_ram = VerifyEntries::new((0..5).map(entry).collect());
        let source = VerifyEntries::source(Box::new(|f| {
            for n in 0..5 {
                if f(&entry(n)).is_break() {
                    return Ok(());
                }
            }
            Ok(())
        }));
        for entries in [&in_ram, &source] {
            let mut seen = 0;
            let r = entries
                .try_for_each(|e| {
                    seen += 1;
                    if e.line == 2 {
                        ControlFlow::Break(e.name.clone())
                    } else {
                        ControlFlow::Continue(())
                    }
                })
                .unwrap();
            assert_eq!(r, ControlFlow::Break(b"f2".to_vec()));
            assert_eq!(seen, 3);
            let all = entries.try_for_each(|_| ControlFlow::<()>::Continue(()));
            assert_eq!(all.unwrap(), ControlFlow::Continue(()));
        }
        let broken = VerifyEntries::source(Box::new(|_| Err(std::io::Error::other("damaged"))));
        assert!(
            broken
                .try_for_each(|_| ControlFlow::<()>::Continue(()))
                .is_err()
        );
    }
}
