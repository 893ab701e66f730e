//! An OCFL storage root or object stored under a prefix, as trawl-ocfl validates one
//! ([`OcflObjects`], a [`trawl_ocfl::OcflTree`]): each "directory" is listed when validation
//! asks for it, one level at a time (ListObjectsV2 with the delimiter `/`), so that memory
//! holds a few directories' listings, never the whole prefix's; a small file (a declaration,
//! an inventory, a sidecar) is read within its cap by ranged GETs pinned to the version listed;
//! the content through an [`ObjectSource`] over the prefix. A key that is no plain name in its
//! "directory" (an empty, `.` or `..` segment, a NUL, not UTF-8 once decoded) is an entry
//! that is neither a file nor a directory: named by validation as a disk's link is, never read.
//! Nothing is written.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use trawl_ocfl::{Kind, Name, OcflDir, OcflTree, SPEC_VERSIONS, Unread};
use trawl_read::is_plain_name;
use trawl_scan::Source;

use crate::depth::Depth;
use crate::range::{Want, fetch};
use crate::{Listed, ObjectSource, ObjectUrl, S3Error, Store, StoreFault};

/// The directories' listings kept besides those of the directories held open (each keeps its
/// own): validation lists a directory, then looks up and reads files in it and below it by
/// their paths from the one above.
const LEVELS_KEPT: usize = 4;

/// Why a prefix could not be taken as an OCFL tree.
#[derive(Debug, thiserror::Error)]
pub enum OcflObjectsError {
    /// The prefix could not be listed.
    #[error(transparent)]
    Store(#[from] S3Error),
    /// No key is under the prefix.
    #[error("{}: no key under this prefix: nothing to validate", .0.display())]
    Empty(PathBuf),
    /// The URL names an inventory file (a key), which is validated alone on disk only.
    #[error(
        "{}: an inventory alone is validated on disk only; name its object's prefix instead",
        .0.display()
    )]
    InventoryAlone(PathBuf),
}

/// A storage root, object or storage hierarchy's directory under a prefix of a store.
pub struct OcflObjects {
    shared: Arc<Shared>,
    shown: PathBuf,
    source: ObjectSource,
}

impl std::fmt::Debug for OcflObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OcflObjects")
            .field("shown", &self.shown)
            .finish_non_exhaustive()
    }
}

/// What every directory of the tree shares: the store, the prefix, the listings kept.
struct Shared {
    store: Arc<Store>,
    url: ObjectUrl,
    kept: Mutex<VecDeque<(String, Arc<Level>)>>,
}

/// A directory's entry: its name, what it is, and for a file what the listing gave of it.
type Entry = (Name, Kind, Option<Listed>);

/// One "directory": its entries sorted by name (a directory before an entry of its name).
struct Level {
    entries: Vec<Entry>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl OcflObjects {
    /// The tree under `url` of `store`, named `shown` in reports (the argument as given): its
    /// top level listed now, so that a bucket or prefix that cannot be listed, or holds
    /// nothing, fails before anything is validated.
    pub fn open(
        store: Arc<Store>,
        url: ObjectUrl,
        shown: &Path,
    ) -> Result<OcflObjects, OcflObjectsError> {
        let shared = Arc::new(Shared {
            store: store.clone(),
            url: url.clone(),
            kept: Mutex::new(VecDeque::new()),
        });
        let top = shared.level(url.prefix())?;
        if top.entries.is_empty() {
            let root = url.root_path();
            let key = url.prefix().trim_end_matches('/');
            if key.ends_with("inventory.json") && store.stored(&url, key).is_ok() {
                return Err(OcflObjectsError::InventoryAlone(root));
            }
            return Err(OcflObjectsError::Empty(root));
        }
        Ok(OcflObjects {
            source: ObjectSource::new(store, vec![url]),
            shared,
            shown: shown.to_path_buf(),
        })
    }
}

impl OcflTree for OcflObjects {
    fn shown(&self) -> &Path {
        &self.shown
    }

    fn top(&self) -> std::io::Result<Box<dyn OcflDir>> {
        Ok(Box::new(ObjectsDir::new(
            self.shared.clone(),
            self.shared.url.prefix().to_string(),
        )))
    }

    /// The nearest "directory" above the prefix (in the bucket) that holds a storage root's
    /// declaration, found by a HeadObject of each declaration's key, nearest first.
    fn enclosing_root(&self) -> Option<String> {
        let prefix = self.shared.url.prefix();
        let ends = prefix
            .trim_end_matches('/')
            .rmatch_indices('/')
            .map(|(at, _)| at + 1)
            .chain((!prefix.is_empty()).then_some(0));
        for end in ends {
            let above = &prefix[..end];
            for v in SPEC_VERSIONS {
                let key = format!("{above}0=ocfl_{v}");
                if self.shared.store.stored(&self.shared.url, &key).is_ok() {
                    return Some(v.to_string());
                }
            }
        }
        None
    }

    fn source(&self) -> &dyn Source {
        &self.source
    }
}

impl Shared {
    /// The listing of the "directory" `prefix` (ending in `/`, or empty: the bucket's top),
    /// kept or made now.
    fn level(&self, prefix: &str) -> Result<Arc<Level>, S3Error> {
        if let Some((_, l)) = lock(&self.kept).iter().find(|(p, _)| p == prefix) {
            return Ok(l.clone());
        }
        let mut files = Vec::new();
        let subs = self.store.list_level(&self.url, prefix, &mut |l| {
            files.extend(file_entry(prefix, l));
        })?;
        let entries = entries_of(prefix, files, &subs);
        let level = Arc::new(Level { entries });
        let mut kept = lock(&self.kept);
        if kept.len() >= LEVELS_KEPT {
            kept.pop_front();
        }
        kept.push_back((prefix.to_string(), level.clone()));
        Ok(level)
    }
}

/// A level's entries: its keys' (`files`, as [`file_entry`] makes them) and its common
/// prefixes', sorted by name. A name that is both a key and a "directory" (`a` and `a/b`) is
/// the directory, and an entry that is no file (a disk has no such pair).
fn entries_of(prefix: &str, mut files: Vec<Entry>, subs: &[String]) -> Vec<Entry> {
    files.extend(subs.iter().map(|s| dir_entry(prefix, s)));
    files.sort_by(|a, b| a.0.cmp(&b.0).then(kind_order(a.1).cmp(&kind_order(b.1))));
    for i in 1..files.len() {
        if files[i].0 == files[i - 1].0 {
            for e in [i - 1, i] {
                if files[e].1 == Kind::File {
                    files[e].1 = Kind::Other;
                    files[e].2 = None;
                }
            }
        }
    }
    files
}

/// Of entries of one name, the directory first: the one a path is looked up through.
fn kind_order(k: Kind) -> u8 {
    match k {
        Kind::Dir => 0,
        Kind::File => 1,
        Kind::Other => 2,
    }
}

/// A key listed in the "directory" `prefix` as its entry: a file where it is one plain name
/// there; none for the directory's own marker (the prefix itself, empty); else an entry that
/// is no file, named by what follows the prefix (the whole key where the store listed one not
/// below it; nothing for a marker that holds data, which no directory on disk could), never
/// read.
fn file_entry(prefix: &str, l: Listed) -> Option<Entry> {
    let Some(rest) = l.key.strip_prefix(prefix) else {
        return Some((l.key.into_bytes(), Kind::Other, None));
    };
    if rest.is_empty() && l.refused.is_none() && l.size == 0 {
        return None;
    }
    if l.refused.is_none() && is_plain_name(rest.as_bytes()) {
        return Some((rest.as_bytes().to_vec(), Kind::File, Some(l)));
    }
    Some((rest.as_bytes().to_vec(), Kind::Other, None))
}

/// A common prefix listed in the "directory" `prefix` as its entry: a directory where it is
/// one plain name there, else an entry that is none, named with its closing `/` (which no
/// name holds: `../`, `/` for an empty segment), never listed.
fn dir_entry(prefix: &str, sub: &str) -> Entry {
    match sub.strip_prefix(prefix).and_then(|r| r.strip_suffix('/')) {
        Some(seg) if is_plain_name(seg.as_bytes()) => (seg.as_bytes().to_vec(), Kind::Dir, None),
        Some(seg) => (format!("{seg}/").into_bytes(), Kind::Other, None),
        None => (sub.as_bytes().to_vec(), Kind::Other, None),
    }
}

/// One "directory" of the tree: the keys under `prefix`, listed once for as long as it is held
/// (a walk holds the directories from the top to where it is, as on disk, and opens each
/// entry from its parent's listing).
struct ObjectsDir {
    shared: Arc<Shared>,
    prefix: String,
    level: OnceLock<Arc<Level>>,
}

/// A listing's failure as a read's.
fn unread(e: S3Error) -> Unread {
    if e.fault() == StoreFault::NotFound {
        return Unread::Missing;
    }
    // The finding names the file already.
    Unread::Io(std::io::Error::other(match e {
        S3Error::Request { message, .. } => message,
        e => e.to_string(),
    }))
}

/// As a disk refuses a name that is not one in a directory.
fn not_plain(name: &[u8]) -> Unread {
    Unread::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "'{}' is not a plain name in one directory",
            String::from_utf8_lossy(name)
        ),
    ))
}

/// `rel` as the directory above its last name, and that name.
fn split(rel: &[u8]) -> (&[u8], &[u8]) {
    match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&[], rel),
    }
}

impl ObjectsDir {
    fn new(shared: Arc<Shared>, prefix: String) -> ObjectsDir {
        ObjectsDir {
            shared,
            prefix,
            level: OnceLock::new(),
        }
    }

    /// This directory's listing, made once.
    fn level(&self) -> Result<&Arc<Level>, S3Error> {
        if let Some(l) = self.level.get() {
            return Ok(l);
        }
        let l = self.shared.level(&self.prefix)?;
        Ok(self.level.get_or_init(|| l))
    }

    /// The entry `name` of this directory: its kind and, for a file, what the listing gave.
    fn entry(&self, name: &[u8]) -> Result<(Kind, Option<Listed>), Unread> {
        if !is_plain_name(name) {
            return Err(not_plain(name));
        }
        let level = self.level().map_err(unread)?;
        // The first of its name: a directory where there is one.
        let i = level.entries.partition_point(|e| e.0.as_slice() < name);
        match level.entries.get(i) {
            Some((n, k, l)) if n == name => Ok((*k, l.clone())),
            _ => Err(Unread::Missing),
        }
    }

    /// The directory `rel` below this one, each step a directory of the listing above it
    /// (None: this one).
    fn descend(&self, rel: &[u8]) -> Result<Option<ObjectsDir>, Unread> {
        let mut at: Option<ObjectsDir> = None;
        for seg in rel.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
            let here = at.as_ref().unwrap_or(self);
            match here.entry(seg)? {
                (Kind::Dir, _) => {
                    // A directory's name is listed, so UTF-8.
                    let seg = std::str::from_utf8(seg).map_err(|_| Unread::Missing)?;
                    let prefix = format!("{}{seg}/", here.prefix);
                    at = Some(ObjectsDir::new(self.shared.clone(), prefix));
                }
                _ => return Err(Unread::NotFile),
            }
        }
        Ok(at)
    }
}

impl OcflDir for ObjectsDir {
    fn open(&self, rel: &[u8]) -> Result<Box<dyn OcflDir>, Unread> {
        Ok(Box::new(self.descend(rel)?.unwrap_or_else(|| ObjectsDir {
            shared: self.shared.clone(),
            prefix: self.prefix.clone(),
            level: self.level.clone(),
        })))
    }

    fn list(&self) -> std::io::Result<Vec<(Name, Kind)>> {
        let level = self.level().map_err(std::io::Error::other)?;
        Ok(level
            .entries
            .iter()
            .map(|(n, k, _)| (n.clone(), *k))
            .collect())
    }

    fn kind_of(&self, rel: &[u8]) -> Option<Kind> {
        let (parent, name) = split(rel);
        let below = self.descend(parent).ok()?;
        Some(below.as_ref().unwrap_or(self).entry(name).ok()?.0)
    }

    fn read_small(&self, rel: &[u8], cap: u64) -> Result<Vec<u8>, Unread> {
        let (parent, name) = split(rel);
        let below = self.descend(parent)?;
        let l = match below.as_ref().unwrap_or(self).entry(name)? {
            (Kind::File, Some(l)) => l,
            _ => return Err(Unread::NotFile),
        };
        if l.size > cap {
            return Err(Unread::TooLarge(cap));
        }
        let store = &self.shared.store;
        let want = Want {
            bucket: self.shared.url.bucket().to_string(),
            path: self.shared.url.key_path(&l.key).display().to_string(),
            key: l.key,
            size: l.size,
            etag: l.etag,
        };
        let depth = Arc::new(Depth::new(None));
        let mut pieces = fetch(store, depth, want);
        let mut out = Vec::with_capacity(l.size as usize);
        while let Some(piece) = pieces.blocking_recv() {
            out.extend_from_slice(&piece.map_err(unread)?);
            if out.len() as u64 > cap {
                return Err(Unread::TooLarge(cap));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(key: &str, refused: Option<&'static str>) -> Listed {
        Listed {
            key: key.to_string(),
            size: 3,
            etag: Some("e".into()),
            mtime_ns: 0,
            refused,
        }
    }

    /// A level's keys and common prefixes as a directory's entries: plain names are files and
    /// directories; the marker is none; every other key or prefix an entry that is neither,
    /// never a file under another name.
    #[test]
    fn keys_and_prefixes_are_entries_and_only_plain_names_files_or_directories() {
        let p = "r/obj/";
        let kinds =
            |e: Option<(Name, Kind, Option<Listed>)>| e.map(|(n, k, l)| (n, k, l.is_some()));
        assert_eq!(
            kinds(file_entry(p, listed("r/obj/inventory.json", None))),
            Some((b"inventory.json".to_vec(), Kind::File, true))
        );
        let mut marker = listed("r/obj/", None);
        marker.size = 0;
        assert_eq!(kinds(file_entry(p, marker)), None);
        // A "marker" that holds data is data no directory holds: an entry, never read.
        assert_eq!(
            kinds(file_entry(p, listed("r/obj/", None))),
            Some((Vec::new(), Kind::Other, false))
        );
        for (key, name) in [
            ("r/obj/..", ".."),
            ("r/obj/.", "."),
            ("r/obj/a\0b", "a\0b"),
            ("q/outside", "q/outside"),
        ] {
            assert_eq!(
                kinds(file_entry(p, listed(key, None))),
                Some((name.as_bytes().to_vec(), Kind::Other, false)),
                "{key}"
            );
        }
        assert_eq!(
            kinds(file_entry(p, listed("r/obj/%FF", Some("not UTF-8")))),
            Some((b"%FF".to_vec(), Kind::Other, false))
        );
        assert_eq!(dir_entry(p, "r/obj/v1/").1, Kind::Dir);
        assert_eq!(dir_entry(p, "r/obj/v1/").0, b"v1");
        for (sub, name) in [("r/obj//", "/"), ("r/obj/../", "../"), ("r/x/", "r/x/")] {
            assert_eq!(
                dir_entry(p, sub),
                (name.as_bytes().to_vec(), Kind::Other, None),
                "{sub}"
            );
        }
    }

    /// A key and a "directory" of one name: the directory is the entry looked up, the key no
    /// file (never read); the rest sorted by name.
    #[test]
    fn a_name_both_key_and_directory_is_the_directory() {
        let p = "r/";
        let files = ["r/v1", "r/b", "r/a"]
            .iter()
            .filter_map(|k| file_entry(p, listed(k, None)))
            .collect();
        let e = entries_of(p, files, &["r/v1/".to_string()]);
        let got: Vec<(&[u8], Kind)> = e.iter().map(|(n, k, _)| (n.as_slice(), *k)).collect();
        assert_eq!(
            got,
            [
                (&b"a"[..], Kind::File),
                (b"b", Kind::File),
                (b"v1", Kind::Dir),
                (b"v1", Kind::Other)
            ]
        );
        assert!(e[3].2.is_none());
    }

    #[test]
    fn a_path_splits_at_its_last_name() {
        assert_eq!(
            split(b"v1/inventory.json"),
            (&b"v1"[..], &b"inventory.json"[..])
        );
        assert_eq!(split(b"inventory.json"), (&b""[..], &b"inventory.json"[..]));
    }
}
