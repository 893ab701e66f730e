//! `s3://BUCKET/PREFIX`: a root that is a bucket's keys under a prefix, taken as a directory
//! (`s3://b/photos` is the keys under `photos/`), and the rule that turns a key into a name
//! beneath that root.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Whether `arg` names objects (`s3://...`) rather than local files.
pub fn is_object_url(arg: &OsStr) -> bool {
    arg.as_bytes().starts_with(b"s3://")
}

/// Why a root is not a bucket and prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not valid UTF-8 (keys are UTF-8).
    #[error("{0}: an S3 root is UTF-8 text")]
    NotUtf8(String),
    /// No bucket, or one S3 does not allow.
    #[error("{0}: not a bucket name (3-63 of a-z, 0-9, '.', '-'; e.g. s3://my-bucket/prefix)")]
    Bucket(String),
    /// A prefix with an empty, `.` or `..` segment, or a NUL: no key's name beneath it would
    /// be one name only.
    #[error("{0}: the prefix must be plain names joined by '/' (no '..', '.', '//' or NUL)")]
    Prefix(String),
}

/// A bucket and a prefix of its keys, with the prefix ending in `/` unless empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    bucket: String,
    prefix: String,
}

impl ObjectUrl {
    /// `s3://BUCKET[/PREFIX[/]]`; None when `arg` is not an `s3://` URL at all.
    pub fn parse(arg: &OsStr) -> Option<Result<ObjectUrl, UrlError>> {
        if !is_object_url(arg) {
            return None;
        }
        let Some(s) = arg.to_str() else {
            return Some(Err(UrlError::NotUtf8(arg.to_string_lossy().into_owned())));
        };
        let rest = &s["s3://".len()..];
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if !bucket_ok(bucket) {
            return Some(Err(UrlError::Bucket(s.to_string())));
        }
        let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
        if !prefix.is_empty() && !plain(prefix) {
            return Some(Err(UrlError::Prefix(s.to_string())));
        }
        let prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        Some(Ok(ObjectUrl {
            bucket: bucket.to_string(),
            prefix,
        }))
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The prefix, ending in `/` (or empty: the whole bucket).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The root as a path: `s3://BUCKET/PREFIX`, without the closing `/`.
    pub fn root_path(&self) -> PathBuf {
        let p = self.prefix.strip_suffix('/').unwrap_or(&self.prefix);
        if p.is_empty() {
            PathBuf::from(format!("s3://{}", self.bucket))
        } else {
            PathBuf::from(format!("s3://{}/{p}", self.bucket))
        }
    }

    /// The object's path: `s3://BUCKET/KEY`.
    pub fn key_path(&self, key: &str) -> PathBuf {
        PathBuf::from(format!("s3://{}/{key}", self.bucket))
    }

    /// The key of the name `rel` beneath the prefix, when `rel` is a plain name.
    pub fn key_of(&self, rel: &[u8]) -> Option<String> {
        let rel = std::str::from_utf8(rel).ok()?;
        plain(rel).then(|| format!("{}{rel}", self.prefix))
    }

    /// The name beneath the prefix of `key` (listed under it), when it is one name only:
    /// plain segments, none empty, `.` or `..`. Keys such as `a//b`, `a/./b` or `../x` have
    /// no such name (on a disk they would be another file's, or outside the root) and are
    /// refused by the caller, never read under a name they do not have.
    pub fn name_of<'k>(&self, key: &'k str) -> Option<&'k str> {
        let rel = key.strip_prefix(&self.prefix)?;
        plain(rel).then_some(rel)
    }
}

/// Whether `rel` is plain segments joined by single `/`s: what names beneath a root are (the
/// local rule, [`trawl_read::plain_segments`]), and nothing it would collapse.
fn plain(rel: &str) -> bool {
    if rel.contains('\0') {
        return false;
    }
    match trawl_read::plain_segments(rel.as_bytes()) {
        Some(segs) => !segs.is_empty() && segs.join(&b'/') == rel.as_bytes(),
        None => false,
    }
}

/// S3's rule for bucket names (3-63 of lowercase letters, digits, dots and hyphens, beginning
/// and ending with a letter or digit); a wider store's names are refused, never guessed at.
fn bucket_ok(b: &str) -> bool {
    (3..=63).contains(&b.len())
        && b.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'.' || c == b'-')
        && b.as_bytes()[0].is_ascii_alphanumeric()
        && b.as_bytes()[b.len() - 1].is_ascii_alphanumeric()
        && !b.contains("..")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Result<ObjectUrl, UrlError> {
        ObjectUrl::parse(OsStr::new(s)).expect("an s3:// url")
    }

    #[test]
    fn a_root_is_a_bucket_and_a_prefix_taken_as_a_directory() {
        let u = url("s3://my-bucket/photos/2024/").unwrap();
        assert_eq!((u.bucket(), u.prefix()), ("my-bucket", "photos/2024/"));
        assert_eq!(u, url("s3://my-bucket/photos/2024").unwrap());
        assert_eq!(u.root_path(), PathBuf::from("s3://my-bucket/photos/2024"));
        assert_eq!(url("s3://my-bucket").unwrap().prefix(), "");
        assert_eq!(url("s3://my-bucket/").unwrap().prefix(), "");
        assert!(ObjectUrl::parse(OsStr::new("/data/s3://x")).is_none());
    }

    #[test]
    fn bad_buckets_and_prefixes_are_refused() {
        for b in [
            "s3://",
            "s3://ab",
            "s3://Upper",
            "s3://a..b",
            "s3://-ab",
            "s3://a_b/x",
        ] {
            assert!(matches!(url(b), Err(UrlError::Bucket(_))), "{b}");
        }
        for p in [
            "s3://bkt/a//b",
            "s3://bkt/../x",
            "s3://bkt/a/./b",
            "s3://bkt//x",
            "s3://bkt/a\0b",
        ] {
            assert!(matches!(url(p), Err(UrlError::Prefix(_))), "{p}");
        }
        let not_utf8 = OsStr::from_bytes(b"s3://bkt/\xff");
        assert!(matches!(
            ObjectUrl::parse(not_utf8),
            Some(Err(UrlError::NotUtf8(_)))
        ));
    }

    #[test]
    fn only_keys_with_one_plain_name_have_a_name() {
        let u = url("s3://bkt/p").unwrap();
        assert_eq!(u.name_of("p/a/b.txt"), Some("a/b.txt"));
        for k in [
            "p/a//b", "p/./a", "p/../a", "p/a/", "p/", "q/a", "p//a", "p/a\0",
        ] {
            assert_eq!(u.name_of(k), None, "{k:?}");
        }
        assert_eq!(u.key_of(b"a/b").as_deref(), Some("p/a/b"));
        assert_eq!(u.key_of(b"a/../b"), None);
        assert_eq!(u.key_of(b"\xff"), None);
    }
}
