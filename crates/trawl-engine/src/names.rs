//! How a scanned file is named in a manifest, and where its keyframe index goes.

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The name a file gets in manifests: relative to the root for a single directory root, else the
/// path as walked; never with a leading `./`.
pub fn manifest_name(path: &Path, roots: &[PathBuf], _root: usize) -> Vec<u8> {
    ManifestNames::new(roots).name(path)
}

/// Whether a root holds files named relative to it: a local directory, or a prefix of a
/// store's keys (`s3://BUCKET/PREFIX`, which is always taken as a directory).
pub fn directory_root(r: &Path) -> bool {
    r.as_os_str().as_bytes().starts_with(b"s3://") || r.is_dir()
}

/// [`manifest_name`] for many files of one scan: whether the roots are one directory is asked
/// of the file system once, not once per file.
#[derive(Debug, Clone)]
pub struct ManifestNames {
    /// The one directory root names are relative to, if there is one.
    base: Option<PathBuf>,
}

impl ManifestNames {
    pub fn new(roots: &[PathBuf]) -> ManifestNames {
        let base = match roots {
            [r] if directory_root(r) => Some(r.clone()),
            _ => None,
        };
        ManifestNames { base }
    }

    /// Whether names sort as the paths they come from do: always under one directory root (a
    /// common prefix comes off), and with several roots unless one of them is spelled with a
    /// leading `./` (which names drop).
    pub fn keeps_order(&self, roots: &[PathBuf]) -> bool {
        self.base.is_some()
            || !roots
                .iter()
                .any(|r| r.as_os_str().as_bytes().starts_with(b"./"))
    }

    pub fn name(&self, path: &Path) -> Vec<u8> {
        let rel = match &self.base {
            Some(r) => below(path, r),
            None => path.as_os_str().as_bytes(),
        };
        let mut b = rel;
        while let Some(rest) = b.strip_prefix(b"./") {
            b = rest;
        }
        b.to_vec()
    }
}

/// `path` below `base`, as `Path::strip_prefix` gives it (or all of `path` when it is not below):
/// by its bytes where the walk made the path from the base and a `/`, which is every file of a
/// scan; component by component otherwise (parsing components was 6% of a small-file scan).
fn below<'p>(path: &'p Path, base: &Path) -> &'p [u8] {
    let (p, b) = (path.as_os_str().as_bytes(), base.as_os_str().as_bytes());
    if let Some(rest) = p.strip_prefix(b)
        && (b.ends_with(b"/") || rest.starts_with(b"/"))
        && !b.is_empty()
        && !rest.split(|&c| c == b'/').any(|c| c == b".")
    {
        let start = rest.iter().position(|&c| c != b'/').unwrap_or(rest.len());
        return &rest[start..];
    }
    path.strip_prefix(base)
        .unwrap_or(path)
        .as_os_str()
        .as_bytes()
}

/// Where a file's keyframe index goes under `--media-index DIR`: always a relative path of
/// plain names, so that it lands under DIR whatever the roots look like (`../x`, `/abs`). With
/// one directory root it is the path below that root; otherwise each root gets its own
/// `N-NAME` (its position among the roots and its last name), so that equal names from two roots
/// do not collide.
pub fn media_index_name(path: &Path, roots: &[PathBuf], root: usize) -> PathBuf {
    let r = &roots[root];
    let below = path.strip_prefix(r).unwrap_or(Path::new(""));
    let plain = |p: &Path| -> PathBuf {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect()
    };
    let mut out = if roots.len() == 1 && directory_root(r) {
        PathBuf::new()
    } else {
        let last = r
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .next_back()
            .unwrap_or_else(|| "root".into());
        PathBuf::from(format!("{}-{last}", root + 1))
    };
    let below = plain(below);
    if !below.as_os_str().is_empty() {
        out.push(below);
    }
    let mut name = out.into_os_string();
    name.push(".keyframes.json");
    PathBuf::from(name)
}

#[cfg(test)]
mod below_tests {
    use super::*;

    #[test]
    fn below_gives_what_strip_prefix_gives() {
        let cases = [
            ("a/b", "a"),
            ("a/b/c", "a/"),
            ("a//b", "a"),
            ("./x/f", "./x"),
            ("./x/f", "x"),
            ("x/./f", "x"),
            ("x/../f", "x/.."),
            ("/abs/dir/f g", "/abs/dir"),
            ("ab/c", "a"),
            ("a", "a"),
            ("other/f", "a"),
        ];
        for (p, b) in cases {
            let want = Path::new(p)
                .strip_prefix(b)
                .map(|r| r.as_os_str().as_bytes())
                .unwrap_or(p.as_bytes());
            assert_eq!(below(Path::new(p), Path::new(b)), want, "{p} below {b}");
        }
    }
}
