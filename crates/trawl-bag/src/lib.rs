//! BagIt (RFC 8493): reading tag files in their declared encodings, validating bags of versions
//! 0.93 to 1.0, and writing bags (in place, into a separate destination, or adding algorithms).
//!
//! Payload bytes are read by the scan engine (one pass, every algorithm at once); this crate
//! decides what must be read and what the results mean.

//!
//! The face: [`create`] (with [`CreateOptions`] and [`Links`]), [`update`] (algorithms added),
//! [`recover`] (an interrupted in-place creation undone or finished) and [`validate`] (a bag
//! wherever a [`BagTree`] reads it from: [`validate_tree`]; on disk a [`DiskBag`]), each
//! reading payloads through the [`Spools`] they are given; [`check_profile`] holds a bag to a
//! BagIt [`Profile`]; payload files are read through trawl-scan's reading service; the tag
//! files' parsers are
//! [`tagfile`]'s, and [`encode_path`] / [`decode_path`] spell names as manifests do.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod create;
mod payload;
mod profile;
pub mod tagfile;
mod validate;

pub use create::{
    CreateOptions, Created, Excluded, InfoEdits, JOURNAL, LINKS_LEFT_OUT, Links, Recovered,
    STAGING, Updated, create, recover, update,
};
pub use payload::{DEFAULT_MEMORY, Spools};
pub use profile::{Profile, ProfileCheck, check_profile, check_serialized, hold_to_profile};
pub use validate::{BagTree, DiskBag, Payload, SUPPORTED_VERSIONS, validate, validate_tree};

use std::path::PathBuf;

/// A failure that stops a bag operation, naming the path.
#[derive(Debug, thiserror::Error)]
pub enum BagError {
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// An output file could not be created: the system's error, or a kind of file never
    /// written (a directory, a block device).
    #[error("{}: {}", .0.path().display(), .0)]
    Create(#[from] trawl_atomic::AtomicError),
    /// The operation refuses (what is wrong, naming the path).
    #[error("{}: {msg}", path.display())]
    Refused {
        /// The path concerned.
        path: PathBuf,
        /// Why.
        msg: String,
    },
}

/// How a bag creation or update, which the caller's token can stop, ended.
#[derive(Debug)]
pub enum BagOutcome<T> {
    /// It ran to its end.
    Finished(T),
    /// Stopped by the token before anything was created or changed.
    Stopped(trawl_stop::Reason),
}

impl<T> BagOutcome<T> {
    /// The stop as an outcome: the token's reason (a signal where none was given).
    pub(crate) fn stopped(stop: &trawl_stop::Stop) -> BagOutcome<T> {
        BagOutcome::Stopped(stop.reason().unwrap_or(trawl_stop::Reason::Signal(2)))
    }
}

/// Why a pass over a spooled list ended early: the spool could not be read back (its own
/// error, named by the caller), or the work on an entry failed with a [`BagError`].
pub(crate) enum Ended {
    Spool(std::io::Error),
    Bag(BagError),
}

impl From<std::io::Error> for Ended {
    fn from(e: std::io::Error) -> Ended {
        Ended::Spool(e)
    }
}

pub(crate) fn io_err(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> BagError + '_ {
    move |source| BagError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Percent-encodes a path for a line of a tag file (RFC 8493 §2.1.3: CR, LF and `%`), so that
/// the line is UTF-8 whatever the name: each byte that is not part of valid UTF-8 is written
/// `%XX` too (a payload name never is: `create` refuses one; a link's name or target left
/// out may be). A UTF-8 name is encoded exactly as RFC 8493 says.
pub fn encode_path(p: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len());
    for chunk in p.utf8_chunks() {
        for &b in chunk.valid().as_bytes() {
            match b {
                b'%' => out.extend_from_slice(b"%25"),
                b'\r' => out.extend_from_slice(b"%0D"),
                b'\n' => out.extend_from_slice(b"%0A"),
                _ => out.push(b),
            }
        }
        for &b in chunk.invalid() {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out
}

/// Reverses [`encode_path`] on raw bytes, to the exact name (which need not be UTF-8): every
/// `%XX` is the byte it names (`encode_path` writes `%` itself as `%25`, so no other `%`
/// sequence comes from it); a `%` not followed by two hex digits is kept.
pub fn decode_path_bytes(p: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(p.len());
    let mut i = 0;
    while i < p.len() {
        let byte = p
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (p[i], byte) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

/// Reverses [`encode_path`] (case-insensitive hex); other `%` sequences are left as they are,
/// as bagit-python does.
pub fn decode_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    let mut rest = p;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3).map(str::to_ascii_uppercase);
        match code.as_deref() {
            Some("25") => out.push('%'),
            Some("0A") => out.push('\n'),
            Some("0D") => out.push('\r'),
            _ => {
                out.push('%');
                rest = &rest[i + 1..];
                continue;
            }
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_round_trip() {
        let name = b"data/100% new\nline\r.txt";
        let enc = encode_path(name);
        assert_eq!(enc, b"data/100%25 new%0Aline%0D.txt");
        assert_eq!(
            decode_path(std::str::from_utf8(&enc).unwrap()).as_bytes(),
            name
        );
        assert_eq!(decode_path("a%0ab%2x"), "a\nb%2x");
    }

    /// A name that is not UTF-8 is encoded as UTF-8 (its stray bytes as `%XX`), and decoded
    /// back to its exact bytes; a UTF-8 name keeps its characters.
    #[test]
    fn a_name_that_is_not_utf8_round_trips_as_utf8() {
        let name = b"d/caf\xc3\xa9 \xff\xfe%\n\xe2\x82";
        let enc = encode_path(name);
        assert_eq!(enc, "d/café %FF%FE%25%0A%E2%82".as_bytes());
        assert!(std::str::from_utf8(&enc).is_ok());
        assert_eq!(decode_path_bytes(&enc), name);
        assert_eq!(decode_path_bytes(b"50%zz%4"), b"50%zz%4");
    }
}
