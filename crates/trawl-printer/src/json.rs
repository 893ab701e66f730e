//! JSON shapes. Paths are bytes on Unix: `path` holds the name as UTF-8, with U+FFFD for bytes
//! that are not UTF-8, and then `path_hex` holds the exact bytes in hex, so that nothing is lost.

use serde::Serialize;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Version of the JSON report layout; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize, Clone)]
pub struct JsonPath {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_hex: Option<String>,
}

impl JsonPath {
    pub fn new(p: &Path) -> JsonPath {
        let bytes = p.as_os_str().as_bytes();
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

/// One file, as a JSON Lines record and as an element of the report's `files`.
#[derive(Debug, Serialize, Clone)]
pub struct FileJson {
    #[serde(flatten)]
    pub path: JsonPath,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Modification time, seconds since the epoch (fractional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtime: Option<f64>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub digests: serde_json::Map<String, serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorJson>,
    /// For an FLV file: a summary of its keyframe index (see the README's "FLV keyframe
    /// index").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flv: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, Clone)]
pub struct ErrorJson {
    pub kind: String,
    pub message: String,
}

#[derive(Debug, Serialize)]
pub struct Totals {
    pub files: u64,
    pub bytes: u64,
    pub skipped: u64,
    pub failed: u64,
    pub seconds: f64,
    pub bytes_per_second: f64,
    pub peak_rss_bytes: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct ScanReport {
    pub schema_version: u32,
    pub trawl_version: String,
    pub roots: Vec<JsonPath>,
    pub algorithms: Vec<String>,
    /// For each of `algorithms`, the library that computed it (`"openssl (OpenSSL 3.0.19 ...)"`,
    /// `"RustCrypto sha2"`, ...).
    pub digest_implementations: std::collections::BTreeMap<String, String>,
    pub io: String,
    pub threads: usize,
    pub totals: Totals,
    /// Data reduction figures (see the README's "Data reduction"); absent with --no-reduce.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduction: Option<serde_json::Value>,
    pub cancelled: bool,
    /// Every file read, sorted by path, then every skipped or failed entry.
    pub files: Vec<FileJson>,
    pub skipped: Vec<FileJson>,
    pub failed: Vec<FileJson>,
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
