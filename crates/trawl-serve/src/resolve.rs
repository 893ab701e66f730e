//! A request path to an open regular file beneath the served directory (see
//! [`trawl_read::beneath`] for how the open cannot leave it). Requests with `..` segments (also
//! percent-encoded) or NUL bytes are refused outright.

use std::fs::File;

pub use trawl_read::beneath::{Refused, Root};

/// The request's path segments after percent-decoding, or why it is refused.
fn segments(raw_path: &str) -> Result<Vec<Vec<u8>>, Refused> {
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(raw_path).collect();
    if bytes.contains(&0) {
        return Err(Refused::Outside);
    }
    let mut out = Vec::new();
    for seg in bytes.split(|&b| b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => return Err(Refused::Outside),
            s => out.push(s.to_vec()),
        }
    }
    Ok(out)
}

/// Opens the regular file `raw_path` (a request path) names beneath `root`.
pub fn open(root: &Root, raw_path: &str) -> Result<File, Refused> {
    trawl_read::beneath::open_beneath(root, segments(raw_path)?)
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
        let root = Root::open(&root).unwrap();
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
}
