//! A request path to an open regular file beneath the served directory (see
//! [`trawl_read::open_beneath`] for how the open cannot leave it), and what is served at all.
//! Requests with `..` segments (also percent-encoded) or NUL bytes are refused outright. Never
//! served: a name with a segment that starts with `.` (`.git/config`, `.env`), a file's name with
//! a trailing `/`, trawl's own catalogs and SQLite's files beside them; by default only FLV
//! files (`.flv`) are, and every other regular file with `--all`.

use std::fs::File;
use std::os::unix::fs::FileExt;

pub use trawl_read::{Refused, RootDir};

/// What a server serves besides FLV files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// FLV files only (`.flv`, any case).
    Media,
    /// Every regular file (`--all`), dotfiles and trawl's databases aside.
    All,
}

/// The request's path segments after percent-decoding, or why it is refused.
fn segments(raw_path: &str) -> Result<Vec<Vec<u8>>, Refused> {
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(raw_path).collect();
    if bytes.contains(&0) {
        return Err(Refused::Outside);
    }
    // A file is named without a trailing `/`: `/a.flv/` names no file.
    if bytes.len() > 1 && bytes.ends_with(b"/") {
        return Err(Refused::NotFound);
    }
    let rel = bytes.strip_prefix(b"/").unwrap_or(&bytes);
    let segs = trawl_read::plain_segments(rel).ok_or(Refused::Outside)?;
    if segs.iter().any(|s| s.starts_with(b".")) {
        return Err(Refused::NotFound);
    }
    Ok(segs)
}

/// Whether the name is one of SQLite's files beside a database.
fn sqlite_sidecar(name: &[u8]) -> bool {
    [&b"-wal"[..], b"-shm", b"-journal"]
        .iter()
        .any(|s| name.ends_with(s))
}

/// Whether `f` is a trawl catalog: an SQLite file whose application id is "trwl".
fn is_catalog(f: &File) -> bool {
    let mut head = [0u8; 72];
    f.read_exact_at(&mut head, 0).is_ok()
        && head.starts_with(b"SQLite format 3\0")
        && head[68..72] == *b"trwl"
}

/// Opens the regular file `raw_path` (a request path) names beneath `root`, if it is one that
/// is served.
pub fn open(root: &RootDir, raw_path: &str, serving: Serving) -> Result<File, Refused> {
    open_segments(root, segments(raw_path)?, serving)
}

/// The directory a request path ending in `/` names beneath `root`, opened to be listed (the
/// same rules as for a file's path: no `..`, no segment starting with `.`, links followed only
/// where they stay beneath).
pub fn open_dir(
    root: &RootDir,
    raw_path: &str,
) -> Result<(trawl_read::DirAt, Vec<Vec<u8>>), Refused> {
    let trimmed = raw_path.strip_suffix('/').ok_or(Refused::NotFound)?;
    let segs = if trimmed.is_empty() {
        Vec::new()
    } else {
        segments(trimmed)?
    };
    let dir = trawl_read::open_dir_beneath(root, segs.clone())?;
    let dir = trawl_read::DirAt::reopen(&dir).map_err(|_| Refused::NotFound)?;
    Ok((dir, segs))
}

/// As [`open`], the path already in segments (plain names, none starting with `.`).
pub fn open_segments(
    root: &RootDir,
    segs: Vec<Vec<u8>>,
    serving: Serving,
) -> Result<File, Refused> {
    let last = segs.last().ok_or(Refused::NotFound)?.clone();
    let flv = last
        .rsplit(|&b| b == b'.')
        .next()
        .is_some_and(|e| last.contains(&b'.') && e.eq_ignore_ascii_case(b"flv"));
    if serving == Serving::Media && !flv {
        return Err(Refused::NotFound);
    }
    if sqlite_sidecar(&last) {
        return Err(Refused::NotFound);
    }
    let f = trawl_read::open_beneath(root, segs)?;
    if is_catalog(&f) {
        return Err(Refused::NotFound);
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traversal_in_every_spelling_is_refused() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("served");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a b.flv"), b"x").unwrap();
        std::fs::write(top.path().join("secret"), b"s").unwrap();
        std::os::unix::fs::symlink(top.path().join("secret"), root.join("out")).unwrap();
        let root = RootDir::open(&root).unwrap();
        let open = |r: &RootDir, p: &str| open(r, p, Serving::All);
        assert!(open(&root, "/sub/a%20b.flv").is_ok());
        for bad in [
            "/../secret",
            "/sub/../../secret",
            "/%2e%2e/secret",
            "/sub/%2E%2E/%2e%2e/secret",
            "/..%2fsecret",
            "/out",
            "/sub/a%00b",
        ] {
            assert_eq!(open(&root, bad).err(), Some(Refused::Outside), "{bad}");
        }
        assert_eq!(open(&root, "/nope.flv").err(), Some(Refused::NotFound));
        assert_eq!(open(&root, "/").err(), Some(Refused::NotFound));
    }

    #[test]
    fn only_what_is_promised_is_served() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path();
        for (name, body) in [
            ("a.flv", &b"FLV"[..]),
            ("B.FLV", b"FLV"),
            ("notes.txt", b"text"),
            (".git/config", b"[core]"),
            ("sub/.env", b"SECRET=1"),
            ("cat.db-wal", b"wal"),
        ] {
            let p = root.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        let mut catalog = b"SQLite format 3\0".to_vec();
        catalog.resize(100, 0);
        catalog[68..72].copy_from_slice(b"trwl");
        std::fs::write(root.join("cat.db"), &catalog).unwrap();
        let r = RootDir::open(root).unwrap();
        use Serving::{All, Media};
        assert!(open(&r, "/a.flv", Media).is_ok());
        assert!(open(&r, "/B.FLV", Media).is_ok());
        assert_eq!(open(&r, "/notes.txt", Media).err(), Some(Refused::NotFound));
        assert!(open(&r, "/notes.txt", All).is_ok());
        for p in [
            "/a.flv/",
            "/.git/config",
            "/sub/.env",
            "/cat.db",
            "/cat.db-wal",
            "/%2egit/config",
        ] {
            assert_eq!(open(&r, p, All).err(), Some(Refused::NotFound), "{p}");
        }
    }
}
