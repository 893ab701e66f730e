//! Checksum manifests: writing and reading the formats other tools use.
//!
//! * GNU coreutils (`sha256sum`, `md5sum`, ..., `b3sum`): `HEX  NAME`. A name holding a backslash,
//!   LF or CR is written with a leading `\` on the line and those bytes as `\\`, `\n`, `\r`
//!   (coreutils 9 rules). With `-z` lines end in NUL and nothing is escaped.
//! * BSD tag (`sha256sum --tag`): `SHA256 (NAME) = HEX`, with the same escaping.
//! * hashdeep: the `%%%% HASHDEEP-1.0` header, a `size,ALG...,filename` column line, then CSV rows
//!   whose last column is the name, unescaped (a name with LF/CR cannot be written: refused).
//!
//! Names are raw bytes: invalid UTF-8 round-trips exactly. On reading, lines that are ambiguous
//! (an escaped line with an unknown escape, an empty name, a NUL in a name, a digest of a length no
//! algorithm has) are rejected with the line number. A tagged line's digest may be base64, as
//! `cksum --base64` writes it.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod parse;
mod write;

pub use parse::{
    MAX_LINE, ParsedManifest, PiecesError, PiecesSummary, algorithms_named_in, detect_and_parse,
    parse_pieces, same_length,
};
pub use write::{ManifestWriter, Style, WriteError, write_manifest};

use trawl_digest::Algorithm;

/// One file in a manifest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// Path bytes as written in the manifest (relative to the manifest's root, `/`-separated).
    pub path: Vec<u8>,
    /// The file's size, where the format records it (hashdeep).
    pub size: Option<u64>,
    /// Each digest given, by algorithm.
    pub digests: Vec<(Algorithm, Vec<u8>)>,
    /// 1-based line number it was read from (0 when built in memory).
    pub line: usize,
    /// Whether the digest's algorithm was taken from its length alone, among several algorithms
    /// of that length (an untagged line, with neither `-d` nor the manifest's name to go by):
    /// it is to be confirmed against the files before a mismatch means anything.
    pub guessed: bool,
    /// Why the line's digest cannot be checked, where it cannot (a BLAKE2b length trawl does
    /// not compute); `digests` is then empty.
    pub unverifiable: Option<String>,
}

/// The algorithms a set of entries uses, in first-seen order.
pub fn algorithms_of(entries: &[Entry]) -> Vec<Algorithm> {
    let mut out: Vec<Algorithm> = Vec::new();
    for e in entries {
        for (a, _) in &e.digests {
            if !out.contains(a) {
                out.push(*a);
            }
        }
    }
    out
}

/// Which format a manifest file is written in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// `DIGEST  NAME` lines, as coreutils' `sha256sum` writes them.
    Gnu(Algorithm),
    /// `ALG (NAME) = DIGEST` lines, as BSD tools and `--tag` write them.
    Bsd(Algorithm),
    /// hashdeep's CSV, with these algorithms' columns.
    Hashdeep(Vec<Algorithm>),
}

impl Format {
    /// The format's name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Gnu(_) => "GNU coreutils",
            Format::Bsd(_) => "BSD tag",
            Format::Hashdeep(_) => "hashdeep",
        }
    }
}

/// The algorithm of a coreutils-style checksum tool named `name` (`sha256sum`, `b2sum`, `b3sum`,
/// `xxh128sum`, and `ALGsum` for every other algorithm trawl has, e.g. `sha3-256sum`).
pub fn gnu_tool_algorithm(name: &str) -> Option<Algorithm> {
    match name {
        "b2sum" => Some(Algorithm::Blake2b),
        "b3sum" => Some(Algorithm::Blake3),
        "xxh128sum" => Some(Algorithm::Xxh3),
        _ => name.strip_suffix("sum")?.parse().ok(),
    }
}

/// The names [`gnu_tool_algorithm`] knows, for messages.
pub const GNU_TOOL_NAMES: &str = "md5sum, sha1sum, sha224sum, sha256sum, sha384sum, sha512sum, b2sum, blake2ssum, sha3-224sum, sha3-256sum, sha3-384sum, sha3-512sum, b3sum, xxh128sum, crc32csum";

/// The algorithms hashdeep itself knows, in the order it writes them.
pub const HASHDEEP_ALGORITHMS: [Algorithm; 3] =
    [Algorithm::Md5, Algorithm::Sha1, Algorithm::Sha256];

/// A problem with one manifest line or with the whole manifest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    /// One line cannot be read.
    #[error("line {line}: {reason}")]
    Line {
        /// Its number, from 1.
        line: usize,
        /// Why.
        reason: String,
    },
    /// One line is longer than [`MAX_LINE`]: not read at all (it may name a file; whether it
    /// is a checksum line is not known).
    #[error("line {line}: longer than {MAX_LINE} bytes: not read")]
    TooLong {
        /// Its number, from 1.
        line: usize,
    },
    /// The manifest as a whole cannot be read (its format, its header).
    #[error("{0}")]
    Whole(String),
}

/// Does `name` need GNU escaping?
pub fn needs_escape(name: &[u8]) -> bool {
    name.iter().any(|&b| b == b'\\' || b == b'\n' || b == b'\r')
}

/// GNU coreutils escaping of a name (the caller adds the leading `\` to the line).
pub fn escape_name(name: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 4);
    for &b in name {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            _ => out.push(b),
        }
    }
    out
}

/// Reverses [`escape_name`]; any other escape is ambiguous and refused.
pub fn unescape_name(name: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(name.len());
    let mut it = name.iter();
    while let Some(&b) = it.next() {
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match it.next() {
            Some(b'\\') => out.push(b'\\'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(&c) => {
                return Err(format!(
                    "unknown escape '\\{}' in an escaped name",
                    c as char
                ));
            }
            None => return Err("escaped name ends in a lone backslash".into()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips() {
        for name in [
            &b"plain"[..],
            b"a\\b",
            b"new\nline",
            b"cr\rx",
            b"\\n literal",
            b"\xff\xfe bytes",
        ] {
            let e = escape_name(name);
            assert!(!e.contains(&b'\n'));
            assert_eq!(unescape_name(&e).unwrap(), name);
        }
        assert!(unescape_name(b"bad\\t").is_err());
        assert!(unescape_name(b"bad\\").is_err());
    }
}
