//! The typed report model: what every run of trawl finds, as plain data that serializes to the
//! documented JSON (schema version [`SCHEMA_VERSION`]). Computing fills these types; the
//! renderers (JSON, human text, and later HTML) only read them.
//!
//! One module per domain: [`scan`] (files, totals, failures), [`reduction`] (dedup, CDC,
//! compression), [`media`] (the FLV summary a scan carries), [`audit`] (a run and its events),
//! [`verify`] (manifest entries and their states), [`bag`] (findings of a bag validation),
//! [`ocfl`] (an OCFL validation's objects and findings).
//! Paths are bytes on Unix: [`JsonPath`] holds the name as UTF-8, with U+FFFD for bytes that are
//! not UTF-8, and then `path_hex` with the exact bytes in hex, so that nothing is lost.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod audit;
pub mod bag;
pub mod breakdown;
pub mod duplicates;
pub mod exclude;
pub mod media;
pub mod ocfl;
pub mod reduction;
pub mod scan;
pub mod verify;

use serde::{Deserialize, Serialize, Serializer};

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Version of the JSON report layout; bumped on any incompatible change (fields are only ever
/// added within a version). docs/json.md lists what changed from version 1 to 2.
pub const SCHEMA_VERSION: u32 = 2;

/// A path as reports give it: as text, and its exact bytes in hex when they are not UTF-8.
#[derive(Debug, Serialize, Deserialize, Clone, Default, PartialEq, Eq)]
pub struct JsonPath {
    /// The path (lossily, when it is not UTF-8).
    pub path: String,
    /// Its bytes in hex, when they are not UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
}

impl JsonPath {
    /// A path as reports spell it: as given or walked, without a leading `./` (as manifests
    /// write it).
    pub fn shown(p: &Path) -> JsonPath {
        let mut b = p.as_os_str().as_bytes();
        while let Some(rest) = b.strip_prefix(b"./") {
            b = rest;
        }
        if b.is_empty() {
            b = b".";
        }
        JsonPath::new(Path::new(std::ffi::OsStr::from_bytes(b)))
    }

    /// The path as it is.
    pub fn new(p: &Path) -> JsonPath {
        JsonPath::from_bytes(p.as_os_str().as_bytes())
    }

    /// A path given as its bytes.
    pub fn from_bytes(bytes: &[u8]) -> JsonPath {
        match std::str::from_utf8(bytes) {
            Ok(s) => JsonPath {
                path: s.to_string(),
                path_hex: None,
            },
            Err(_) => JsonPath {
                path: String::from_utf8_lossy(bytes).into_owned(),
                path_hex: Some(hex::encode(bytes)),
            },
        }
    }
}

impl From<&str> for JsonPath {
    fn from(s: &str) -> JsonPath {
        JsonPath {
            path: s.to_string(),
            path_hex: None,
        }
    }
}

/// For people: the text, and when the bytes are not UTF-8, the bytes too (two names that differ
/// only in bytes that are not UTF-8 read alike as text).
impl std::fmt::Display for JsonPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path)?;
        if let Some(h) = &self.path_hex {
            write!(f, " [bytes {h}]")?;
        }
        Ok(())
    }
}

/// Serializes a value with its object keys in byte order, at every depth: how schema 1 writes
/// the `reduction` object and a file's `flv` summary.
pub fn sorted_keys<T: Serialize, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(v)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// Serializes path bytes as a [`JsonPath`] (flattened: `path`, and `path_hex` when needed).
pub fn bytes_as_path<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
    JsonPath::new(Path::new(std::ffi::OsStr::from_bytes(b))).serialize(s)
}

/// As [`bytes_as_path`], for a list.
pub fn bytes_list_as_paths<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
    let paths: Vec<JsonPath> = v
        .iter()
        .map(|b| JsonPath::new(Path::new(std::ffi::OsStr::from_bytes(b))))
        .collect();
    paths.serialize(s)
}

/// As [`sorted_keys`], for an optional value.
pub fn sorted_keys_opt<T: Serialize, S: Serializer>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => sorted_keys(v, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn invalid_utf8_keeps_its_bytes() {
        let p = Path::new(OsStr::from_bytes(b"a\xffb"));
        let j = JsonPath::new(p);
        assert_eq!(j.path, "a\u{fffd}b");
        assert_eq!(j.path_hex.as_deref(), Some("61ff62"));
        assert!(JsonPath::new(Path::new("ok")).path_hex.is_none());
    }
}
