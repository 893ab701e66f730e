//! A request path to a file under the served directory, refusing everything that would leave it:
//! `..` segments (also percent-encoded), NUL bytes, and symbolic links that point outside.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why a path is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// 403: it would leave the directory.
    Outside,
    /// 404.
    NotFound,
}

/// `root` must be canonical. Returns the canonical path of a regular file inside it.
pub fn resolve(root: &Path, raw_path: &str) -> Result<PathBuf, Refused> {
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(raw_path).collect();
    if bytes.contains(&0) {
        return Err(Refused::Outside);
    }
    let mut p = root.to_path_buf();
    for seg in bytes.split(|&b| b == b'/') {
        match seg {
            b"" | b"." => {}
            b".." => return Err(Refused::Outside),
            s => p.push(OsStr::from_bytes(s)),
        }
    }
    let real = p.canonicalize().map_err(|_| Refused::NotFound)?;
    if !real.starts_with(root) {
        return Err(Refused::Outside);
    }
    match real.metadata() {
        Ok(m) if m.is_file() => Ok(real),
        _ => Err(Refused::NotFound),
    }
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
        std::os::unix::fs::symlink(root.join("sub/a b.flv"), root.join("in")).unwrap();
        let root = root.canonicalize().unwrap();
        assert!(resolve(&root, "/sub/a%20b.flv").is_ok());
        assert!(resolve(&root, "/in").is_ok());
        for bad in [
            "/../secret",
            "/sub/../../secret",
            "/%2e%2e/secret",
            "/sub/%2E%2E/%2e%2e/secret",
            "/..%2fsecret",
            "/out",
            "/sub/a%00b",
        ] {
            assert_eq!(resolve(&root, bad), Err(Refused::Outside), "{bad}");
        }
        assert_eq!(resolve(&root, "/nope.flv"), Err(Refused::NotFound));
        assert_eq!(resolve(&root, "/sub"), Err(Refused::NotFound));
    }
}
