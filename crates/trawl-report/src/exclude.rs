//! What the user's rules left out (`--exclude`), as reports give it: counts, and the first
//! entries in path order, whatever order they were met in (so that the same tree gives the
//! same report, on one machine or a cluster), in memory bounded by [`EXCLUDED_LISTED`].

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::JsonPath;

/// Excluded entries named in a report; past them they are counted.
pub const EXCLUDED_LISTED: usize = 1000;

/// The report's `excluded`: the rules, what they left out, the first [`EXCLUDED_LISTED`] entries.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ExcludedJson {
    /// The patterns (`--exclude`, and the lines of `--exclude-from`), in order.
    pub patterns: Vec<String>,
    /// The `--exclude-if-present` names.
    pub if_present: Vec<JsonPath>,
    /// Directories left out whole (never listed: what they hold is not counted).
    pub directories: u64,
    /// Regular files left out (outside the directories left out).
    pub files: u64,
    /// Their bytes, as the walk saw them.
    pub bytes: u64,
    /// Other entries left out (links, special files).
    pub other: u64,
    /// The first [`EXCLUDED_LISTED`] entries left out, by path bytes.
    pub listed: Vec<ExcludedEntry>,
    /// The entries left out past them.
    pub not_listed: u64,
    /// An audit's: registered files left out (not read, not called missing, their
    /// registration kept as it was).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub registered: Option<u64>,
}

/// One entry left out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ExcludedEntry {
    /// The entry, as the walk met it.
    #[serde(flatten)]
    pub path: JsonPath,
    /// `directory`, `file`, or what else it is (`symlink`, `fifo`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// A regular file's size.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub size: Option<u64>,
    /// The pattern that matched it, as given.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub pattern: Option<String>,
    /// For a directory left out by `--exclude-if-present`: the name it holds (lossily, when
    /// it is not UTF-8).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub holds: Option<String>,
    /// That name's bytes in hex, when they are not UTF-8 (as [`JsonPath::path_hex`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub holds_hex: Option<String>,
}

impl ExcludedEntry {
    /// The path's bytes (what the list is ordered by).
    fn key(&self) -> Vec<u8> {
        match &self.path.path_hex {
            Some(h) => hex::decode(h).unwrap_or_else(|_| self.path.path.as_bytes().to_vec()),
            None => self.path.path.as_bytes().to_vec(),
        }
    }
}

impl ExcludedJson {
    /// Entries left out, of every kind.
    pub fn entries(&self) -> u64 {
        self.directories + self.files + self.other
    }

    /// Takes in another's counts and list (a cluster's listing task's), keeping the first
    /// [`EXCLUDED_LISTED`] entries of both by path bytes: the result of one tally of both's entries.
    pub fn merge(&mut self, other: ExcludedJson) {
        self.directories += other.directories;
        self.files += other.files;
        self.bytes += other.bytes;
        self.other += other.other;
        self.not_listed += other.not_listed;
        let mut a = std::mem::take(&mut self.listed).into_iter().peekable();
        let mut b = other.listed.into_iter().peekable();
        while let (Some(x), Some(y)) = (a.peek(), b.peek()) {
            let next = if x.key() <= y.key() {
                a.next()
            } else {
                b.next()
            };
            self.listed.extend(next);
        }
        self.listed.extend(a);
        self.listed.extend(b);
        if self.listed.len() > EXCLUDED_LISTED {
            self.not_listed += (self.listed.len() - EXCLUDED_LISTED) as u64;
            self.listed.truncate(EXCLUDED_LISTED);
        }
    }
}

/// What was left out so far, taken in any order.
#[derive(Debug, Default)]
pub struct ExcludedTally {
    counts: ExcludedJson,
    listed: BTreeMap<Vec<u8>, ExcludedEntry>,
}

impl ExcludedTally {
    /// Counts one entry left out: `kind` as [`ExcludedEntry::kind`], why as `pattern` or
    /// `holds`.
    pub fn add(
        &mut self,
        path: &Path,
        kind: &str,
        size: Option<u64>,
        pattern: Option<&str>,
        holds: Option<&std::ffi::OsStr>,
    ) {
        // The name held, spelt as a path is: text, and its bytes in hex when not UTF-8.
        let holds = holds.map(|h| JsonPath::new(Path::new(h)));
        let entry = ExcludedEntry {
            path: JsonPath::shown(path),
            kind: kind.to_string(),
            size,
            pattern: pattern.map(str::to_string),
            holds_hex: holds.as_ref().and_then(|h| h.path_hex.clone()),
            holds: holds.map(|h| h.path),
        };
        let key = path.as_os_str().as_bytes().to_vec();
        self.count(&entry);
        self.keep(key, entry);
    }

    fn count(&mut self, e: &ExcludedEntry) {
        let c = &mut self.counts;
        match e.kind.as_str() {
            "directory" => c.directories += 1,
            "file" => {
                c.files += 1;
                c.bytes += e.size.unwrap_or(0);
            }
            _ => c.other += 1,
        }
    }

    /// Keeps `entry` if it is among the first [`EXCLUDED_LISTED`] by path; counts what falls out.
    fn keep(&mut self, key: Vec<u8>, entry: ExcludedEntry) {
        if self.listed.len() >= EXCLUDED_LISTED {
            match self.listed.last_key_value() {
                Some((last, _)) if *last > key => {
                    self.listed.pop_last();
                }
                _ => {
                    self.counts.not_listed += 1;
                    return;
                }
            }
            self.counts.not_listed += 1;
        }
        self.listed.insert(key, entry);
    }

    /// Takes in another tally's result (a cluster's listing task's).
    pub fn absorb(&mut self, other: ExcludedJson) {
        let c = &mut self.counts;
        c.directories += other.directories;
        c.files += other.files;
        c.bytes += other.bytes;
        c.other += other.other;
        c.not_listed += other.not_listed;
        for e in other.listed {
            self.keep(e.key(), e);
        }
    }

    /// Whether nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The counts and the list, for the rules `patterns` and `if_present` (names as bytes).
    pub fn finish(self, patterns: &[String], if_present: &[&[u8]]) -> ExcludedJson {
        ExcludedJson {
            patterns: patterns.to_vec(),
            if_present: if_present.iter().map(|n| JsonPath::from_bytes(n)).collect(),
            listed: self.listed.into_values().collect(),
            ..self.counts
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    /// The list holds the first entries by path bytes whatever order they come in, and the
    /// counts are the same whether the entries come to one tally or to several absorbed into
    /// one (a cluster's listing tasks).
    #[test]
    fn the_list_is_the_first_by_path_in_any_order_and_in_any_split() {
        let names: Vec<Vec<u8>> = (0..EXCLUDED_LISTED + 50)
            .map(|i| format!("d/{:05}", (i * 7919) % (EXCLUDED_LISTED + 50)).into_bytes())
            .chain([b"d/\xff".to_vec()])
            .collect();
        let add = |t: &mut ExcludedTally, n: &[u8], i: usize| {
            let kind = if i.is_multiple_of(2) {
                "file"
            } else {
                "directory"
            };
            t.add(
                Path::new(OsStr::from_bytes(n)),
                kind,
                i.is_multiple_of(2).then_some(3),
                Some("d/*"),
                None,
            );
        };
        let mut one = ExcludedTally::default();
        for (i, n) in names.iter().enumerate() {
            add(&mut one, n, i);
        }
        let mut whole = ExcludedTally::default();
        let mut merged = ExcludedJson::default();
        for chunk in names.iter().enumerate().collect::<Vec<_>>().chunks(97) {
            let mut part = ExcludedTally::default();
            for (i, n) in chunk {
                add(&mut part, n, *i);
            }
            let part = part.finish(&[], &[]);
            merged.merge(part.clone());
            whole.absorb(part);
        }
        let a = one.finish(&["d/*".into()], &[b".nobackup"]);
        let b = whole.finish(&["d/*".into()], &[b".nobackup"]);
        assert_eq!(a, b);
        merged.patterns = a.patterns.clone();
        merged.if_present = a.if_present.clone();
        assert_eq!(a, merged);
        assert_eq!(a.listed.len(), EXCLUDED_LISTED);
        assert_eq!(a.not_listed, 51);
        assert_eq!(a.files + a.directories, names.len() as u64);
        assert_eq!(a.bytes, 3 * a.files);
        assert_eq!(a.listed[0].path.path, "d/00000");
        assert_eq!(
            a.listed[EXCLUDED_LISTED - 1].path.path,
            format!("d/{:05}", EXCLUDED_LISTED - 1)
        );
        // The name that is not UTF-8 sorts last by its bytes and is not listed.
        assert!(a.listed.iter().all(|e| e.path.path_hex.is_none()));
    }
}
