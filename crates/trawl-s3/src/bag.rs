//! A BagIt bag stored under a prefix, as trawl-bag validates one ([`BagObjects`], a
//! [`trawl_bag::BagTree`]): one listing of the prefix gives both the tag files (the keys
//! outside `data/`, held by name) and the payload (the keys under it, spooled in name order);
//! a tag file is read by ranged GETs pinned to the version listed, the payload through an
//! [`ObjectSource`] over the prefix, each object as listed (no HeadObject). Nothing is
//! written, and nothing outside the prefix is asked for.

use std::collections::BTreeMap;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Buf, Bytes};
use crossbeam_channel::Receiver;
use trawl_bag::{BagError, BagTree, Payload, Spools};
use trawl_report::{BagFinding, BagReport};
use trawl_scan::{Event, LaneFactory, Outcome, Progress, Resolve, ScanConfig, Source};
use trawl_spool::Spool;
use trawl_stop::Stop;
use trawl_walk::FileEntry;

use crate::depth::Depth;
use crate::range::{Pieces, Want, fetch};
use crate::{Listed, ObjectSource, ObjectUrl, S3Error, Store};

/// The most keys outside `data/` a bag's prefix may hold: a bag's tag files are a handful,
/// and each is held in memory by name.
pub const TAG_KEYS_MAX: usize = 100_000;

/// Requests in flight for one tag file.
const TAG_DEPTH: usize = 2;

/// Keys that are no plain name named one by one; the rest are counted in one finding.
const ODD_SHOWN: usize = 100;

/// Why a bag's prefix could not be taken as a bag.
#[derive(Debug, thiserror::Error)]
pub enum BagObjectsError {
    /// The prefix could not be listed.
    #[error(transparent)]
    Store(#[from] S3Error),
    /// The listing could not be spooled, or the prefix holds no bag's shape.
    #[error(transparent)]
    Bag(#[from] BagError),
}

/// A bag under a prefix of a store, listed once.
pub struct BagObjects {
    store: Arc<Store>,
    url: ObjectUrl,
    root: PathBuf,
    source: PayloadObjects,
    /// The keys outside `data/` by their names below the prefix.
    tags: BTreeMap<String, Listed>,
    /// The keys under `data/` by name (`data/...`), each with its size, time (8 bytes each,
    /// big-endian) and ETag, as listed.
    payload: Arc<trawl_spool::Sorted>,
    count: u64,
    bytes: u64,
    /// Whether any key is under `data/` (its "directory" marker included).
    data_seen: bool,
    /// Whether a key is named `data` itself, where the payload directory must be.
    data_object: bool,
    /// Keys that are no plain name below the prefix, each an error naming it (the first
    /// [`ODD_SHOWN`]), and how many more.
    odd: Vec<BagFinding>,
    odd_more: u64,
}

impl std::fmt::Debug for BagObjects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BagObjects")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// What the listing found, as it was taken in.
struct Taken {
    tags: BTreeMap<String, Listed>,
    spool: Spool,
    count: u64,
    bytes: u64,
    data_seen: bool,
    data_object: bool,
    odd: Vec<BagFinding>,
    odd_more: u64,
    failed: Option<BagError>,
}

impl Taken {
    /// Nothing yet; the payload's keys spooled with half the memory `spools` has.
    fn new(spools: &Spools) -> Taken {
        Taken {
            tags: BTreeMap::new(),
            spool: Spool::new(&spools.dir, (spools.memory / 2).max(1)),
            count: 0,
            bytes: 0,
            data_seen: false,
            data_object: false,
            odd: Vec::new(),
            odd_more: 0,
            failed: None,
        }
    }
}

impl BagObjects {
    /// The bag under `url` of `store`: the prefix listed once, the payload's keys spooled
    /// under `spools`.
    pub fn open(
        store: Arc<Store>,
        url: ObjectUrl,
        spools: &Spools,
        stop: &Stop,
    ) -> Result<BagObjects, BagObjectsError> {
        let root = url.root_path();
        let mut t = Taken::new(spools);
        store.list(&url, stop, &mut |l| take(&url, &root, spools, &mut t, l))?;
        if let Some(e) = t.failed {
            return Err(e.into());
        }
        let spool_err = |source| BagError::Io {
            path: spools.dir.clone(),
            source,
        };
        let payload = Arc::new(t.spool.finish().map_err(spool_err)?);
        Ok(BagObjects {
            source: PayloadObjects {
                objects: ObjectSource::new(store.clone(), vec![url.clone()]),
                url: url.clone(),
                payload: payload.clone(),
            },
            store,
            url,
            root,
            tags: t.tags,
            payload,
            count: t.count,
            bytes: t.bytes,
            data_seen: t.data_seen,
            data_object: t.data_object,
            odd: t.odd,
            odd_more: t.odd_more,
        })
    }
}

/// One listed key into what the listing found: a tag file, a payload file, a "directory"
/// marker passed over, or a key that is no plain name (an error naming it).
fn take(
    url: &ObjectUrl,
    root: &Path,
    spools: &Spools,
    t: &mut Taken,
    l: Listed,
) -> ControlFlow<()> {
    if l.key
        .strip_prefix(url.prefix())
        .is_some_and(|rel| rel.starts_with("data/"))
    {
        t.data_seen = true;
    }
    // A "directory" marker (an empty key ending in `/`) is no object of its own, as a scan
    // of the prefix passes it over.
    if l.refused.is_none() && l.key.ends_with('/') && l.size == 0 {
        return ControlFlow::Continue(());
    }
    let Some(name) = url.name_of(&l.key).filter(|_| l.refused.is_none()) else {
        if t.odd.len() < ODD_SHOWN {
            t.odd.push(match l.refused {
                Some(why) => {
                    BagFinding::about(url.key_path(&l.key).display(), format!("{why}: not read"))
                }
                None => not_plain(url, root, &l.key),
            });
        } else {
            t.odd_more += 1;
        }
        return ControlFlow::Continue(());
    };
    if name.starts_with("data/") {
        t.count += 1;
        t.bytes = t.bytes.saturating_add(l.size);
        let mut value = Vec::with_capacity(16 + l.etag.as_ref().map_or(0, String::len));
        value.extend_from_slice(&l.size.to_be_bytes());
        value.extend_from_slice(&l.mtime_ns.to_be_bytes());
        value.extend_from_slice(l.etag.as_deref().unwrap_or("").as_bytes());
        if let Err(source) = t.spool.push(name.as_bytes(), &value) {
            t.failed = Some(BagError::Io {
                path: spools.dir.clone(),
                source,
            });
            return ControlFlow::Break(());
        }
        return ControlFlow::Continue(());
    }
    if name == "data" {
        t.data_object = true;
        return ControlFlow::Continue(());
    }
    if t.tags.len() >= TAG_KEYS_MAX {
        t.failed = Some(BagError::Refused {
            path: root.to_path_buf(),
            msg: format!(
                "more than {TAG_KEYS_MAX} keys outside data/: not taken as a bag's tag files"
            ),
        });
        return ControlFlow::Break(());
    }
    t.tags.insert(name.to_string(), l);
    ControlFlow::Continue(())
}

/// A key that is no plain name below the prefix, named, as an error.
fn not_plain(url: &ObjectUrl, root: &Path, key: &str) -> BagFinding {
    BagFinding::about(
        url.key_path(key).display(),
        format!(
            "a key that is not one plain name beneath {} (an empty, '.' or '..' segment, or a \
             NUL): not read",
            root.display()
        ),
    )
}

impl BagTree for BagObjects {
    fn root(&self) -> &Path {
        &self.root
    }

    fn open_tag(&self, name: &str) -> Result<Option<Box<dyn Read + '_>>, BagError> {
        if self.url.key_of(name.as_bytes()).is_none() {
            return Err(BagError::Refused {
                path: self.root.join(name),
                msg: "names a file outside the bag".into(),
            });
        }
        let Some(l) = self.tags.get(name) else {
            return Ok(None);
        };
        let want = Want {
            bucket: self.url.bucket().to_string(),
            key: l.key.clone(),
            path: self.url.key_path(&l.key).display().to_string(),
            size: l.size,
            etag: l.etag.clone(),
        };
        // Two ranges in flight: the reader stops at its kind's cap, often within the first,
        // and a store's claimed size asks for nothing past what it may read.
        let pieces = fetch(&self.store, Arc::new(Depth::new(Some(TAG_DEPTH))), want);
        Ok(Some(Box::new(ObjectReader {
            pieces,
            piece: Bytes::new(),
        })))
    }

    fn has(&self, name: &str) -> bool {
        self.tags.contains_key(name)
    }

    fn names_at_top(&self) -> Result<Vec<String>, BagError> {
        Ok(self
            .tags
            .keys()
            .filter(|k| !k.contains('/'))
            .cloned()
            .collect())
    }

    fn payload_directory(&self, report: &mut BagReport) {
        if self.data_object {
            report.errors.push(BagFinding::about(
                "data/",
                "an object named 'data' where the payload directory must be",
            ));
        } else if !self.data_seen {
            // A store holds no empty directory: a bag of no payload files, uploaded, has no
            // key under data/ at all.
            report.warnings.push(BagFinding::about(
                "data/",
                "no key under data/: taken as an empty payload directory",
            ));
        }
    }

    fn odd_tag_entries(&self, report: &mut BagReport) -> Result<(), BagError> {
        report.errors.extend(self.odd.iter().cloned());
        let mut nesting = Nesting::default();
        for name in self.tags.keys() {
            nesting.take(name.as_bytes());
        }
        nesting.into_report(report);
        if self.odd_more > 0 {
            report.errors.push(BagFinding::about(
                self.root.display(),
                format!(
                    "{} more keys that are not one plain name (the first {ODD_SHOWN} are shown)",
                    self.odd_more
                ),
            ));
        }
        Ok(())
    }

    fn payload(&self, report: &mut BagReport, spools: &Spools) -> Result<Payload, BagError> {
        let mut nesting = Nesting::default();
        self.payload
            .for_each(|name, _| -> std::io::Result<()> {
                nesting.take(name);
                Ok(())
            })
            .map_err(|source| BagError::Io {
                path: spools.dir.clone(),
                source,
            })?;
        nesting.into_report(report);
        Ok(Payload {
            files: self.payload.clone(),
            count: self.count,
            bytes: self.bytes,
        })
    }

    fn source(&self) -> &dyn Source {
        &self.source
    }
}

/// Objects, taken in name order, that a later one lies below (`data/a` and `data/a/b`): a
/// store holds both, no directory on disk can, so no copy of the bag on disk would hold what
/// its manifests list. Each is an error naming it (the first [`ODD_SHOWN`]), then a count.
#[derive(Default)]
struct Nesting {
    /// The names taken that are a prefix of the last one, each longer than the one below it
    /// (at most a key's length deep), with whether it was said.
    stack: Vec<(Vec<u8>, bool)>,
    found: Vec<BagFinding>,
    more: u64,
}

impl Nesting {
    /// The next name in order. An object a later name lies below is on the stack when that
    /// name comes: every name between the two begins with it.
    fn take(&mut self, name: &[u8]) {
        while self
            .stack
            .last()
            .is_some_and(|(top, _)| !name.starts_with(top))
        {
            self.stack.pop();
        }
        if let Some((top, said)) = self.stack.last_mut()
            && !*said
            && name.get(top.len()) == Some(&b'/')
        {
            *said = true;
            if self.found.len() < ODD_SHOWN {
                let top = String::from_utf8_lossy(top);
                self.found.push(BagFinding::about(
                    &*top,
                    format!(
                        "an object, and objects below it as a directory ({top}/...): no copy of \
                         the bag on disk can hold both"
                    ),
                ));
            } else {
                self.more += 1;
            }
        }
        self.stack.push((name.to_vec(), false));
    }

    fn into_report(self, report: &mut BagReport) {
        report.errors.extend(self.found);
        if self.more > 0 {
            report.errors.push(BagFinding::bag(format!(
                "{} more objects with objects below them (the first {ODD_SHOWN} are shown)",
                self.more
            )));
        }
    }
}

/// The payload's objects, each as the listing gave it: the names validation reads come in the
/// listing's order, so each is found by reading the spooled listing along with them (its size
/// and the ETag every range is pinned to), with no request; a name asked for out of that order
/// (one paired across Unicode normalization forms) is looked up with a HeadObject.
struct PayloadObjects {
    objects: ObjectSource,
    url: ObjectUrl,
    payload: Arc<trawl_spool::Sorted>,
}

impl Source for PayloadObjects {
    fn resolver(&self) -> Box<dyn Resolve + '_> {
        Box::new(InListing {
            source: self,
            records: self.payload.iter().ok(),
            head: None,
            fallback: self.objects.resolver(),
        })
    }

    fn read(
        &self,
        cfg: &ScanConfig,
        lanes: &dyn LaneFactory,
        progress: &dyn Progress,
        stop: &Stop,
        entries: Receiver<FileEntry>,
        sink: &mut dyn FnMut(Event),
    ) {
        self.objects.read(cfg, lanes, progress, stop, entries, sink);
    }
}

/// [`PayloadObjects`]' names, found in the spooled listing read along with them.
struct InListing<'a> {
    source: &'a PayloadObjects,
    /// The listing from the record after `head` (None: it could not be read back, and every
    /// name is looked up).
    records: Option<trawl_spool::Records>,
    /// The record last read: a name and what the listing gave of it.
    head: Option<(Vec<u8>, Vec<u8>)>,
    fallback: Box<dyn Resolve + 'a>,
}

impl InListing<'_> {
    /// The listing's size, time and ETag of `rel`, when it is the next name at or after the
    /// records read so far.
    fn listed(&mut self, rel: &[u8]) -> Option<Listed> {
        loop {
            match &self.head {
                Some((k, _)) if k.as_slice() >= rel => break,
                _ => {
                    let next = self.records.as_mut()?.next_record().ok()??;
                    self.head = Some((next.0.to_vec(), next.1.to_vec()));
                }
            }
        }
        let (k, v) = self.head.as_ref()?;
        if k.as_slice() != rel || v.len() < 16 {
            return None;
        }
        let etag = String::from_utf8_lossy(&v[16..]).into_owned();
        Some(Listed {
            key: format!(
                "{}{}",
                self.source.url.prefix(),
                std::str::from_utf8(rel).ok()?
            ),
            size: u64::from_be_bytes(v[..8].try_into().ok()?),
            mtime_ns: i64::from_be_bytes(v[8..16].try_into().ok()?),
            etag: (!etag.is_empty()).then_some(etag),
            refused: None,
        })
    }
}

impl Resolve for InListing<'_> {
    fn entry(&mut self, root: usize, rel: &[u8]) -> Result<FileEntry, Outcome> {
        match self.listed(rel).filter(|_| root == 0) {
            Some(l) => Ok(self.source.objects.entry(0, &self.source.url, &l)),
            None => self.fallback.entry(root, rel),
        }
    }

    fn known(&mut self, e: FileEntry) -> Result<FileEntry, Outcome> {
        self.fallback.known(e)
    }
}

/// One object's bytes as a reader: its ranged reads' pieces in order, at most a few held.
struct ObjectReader {
    pieces: Pieces,
    piece: Bytes,
}

impl Read for ObjectReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.piece.is_empty() {
            match self.pieces.blocking_recv() {
                None => return Ok(0),
                Some(Ok(b)) => self.piece = b,
                // The error names the object already: the caller names it once.
                Some(Err(S3Error::Request { message, .. })) => {
                    return Err(std::io::Error::other(message));
                }
                Some(Err(e)) => return Err(std::io::Error::other(e)),
            }
        }
        let n = buf.len().min(self.piece.len());
        buf[..n].copy_from_slice(&self.piece[..n]);
        self.piece.advance(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(key: &str, size: u64) -> Listed {
        Listed {
            key: key.to_string(),
            size,
            etag: Some("e".into()),
            mtime_ns: 0,
            refused: None,
        }
    }

    /// Each key of a listing into its place: tag files by name, payload files spooled, markers
    /// passed over, and a key that is no plain name below the prefix (or not below it at all)
    /// an error naming it, never a file under another name.
    #[test]
    fn a_listing_is_taken_apart_into_tags_payload_and_findings() {
        let url = ObjectUrl::parse(std::ffi::OsStr::new("s3://bkt/p"))
            .unwrap()
            .unwrap();
        let root = url.root_path();
        let spools = Spools::default();
        let mut t = Taken::new(&spools);
        for (key, size) in [
            ("p/bagit.txt", 55),
            ("p/manifest-sha256.txt", 100),
            ("p/tags/extra.txt", 3),
            ("p/data/", 0),
            ("p/data/a.txt", 5),
            ("p/data/sub/b.txt", 7),
            ("p/data/a//b", 1),
            ("p/../secret", 1),
            ("q/outside", 1),
            ("p/data/x/../../bagit.txt", 1),
        ] {
            assert!(take(&url, &root, &spools, &mut t, listed(key, size)).is_continue());
        }
        let tags: Vec<&str> = t.tags.keys().map(String::as_str).collect();
        assert_eq!(tags, ["bagit.txt", "manifest-sha256.txt", "tags/extra.txt"]);
        assert_eq!((t.count, t.bytes, t.data_seen), (2, 12, true));
        let payload = Arc::new(t.spool.finish().unwrap());
        let mut names = Vec::new();
        payload
            .for_each(|k, _| -> std::io::Result<()> {
                names.push(String::from_utf8_lossy(k).into_owned());
                Ok(())
            })
            .unwrap();
        assert_eq!(names, ["data/a.txt", "data/sub/b.txt"]);
        let odd: Vec<String> = t.odd.iter().map(|f| f.to_string()).collect();
        assert_eq!(odd.len(), 4, "{odd:?}");
        for (f, key) in odd.iter().zip([
            "p/data/a//b",
            "p/../secret",
            "q/outside",
            "p/data/x/../../bagit.txt",
        ]) {
            assert!(
                f.starts_with(&format!("s3://bkt/{key}: a key that is not one plain name")),
                "{f}"
            );
        }
    }

    /// A listing of any number of such keys costs a hundred findings and a count.
    #[test]
    fn keys_that_are_no_plain_name_are_named_up_to_a_hundred_then_counted() {
        let url = ObjectUrl::parse(std::ffi::OsStr::new("s3://bkt/p"))
            .unwrap()
            .unwrap();
        let spools = Spools::default();
        let mut t = Taken::new(&spools);
        for i in 0..150 {
            let _ = take(
                &url,
                &url.root_path(),
                &spools,
                &mut t,
                listed(&format!("p//{i}"), 1),
            );
        }
        assert_eq!((t.odd.len(), t.odd_more), (ODD_SHOWN, 50));
    }

    /// An object that others lie below is named once, however many there are and whatever
    /// names sort between them; names that only begin with another's are no directory of it.
    #[test]
    fn an_object_with_objects_below_it_is_named_once() {
        let mut n = Nesting::default();
        for name in [
            "data/a",
            "data/a-x",
            "data/a.txt",
            "data/a/b",
            "data/a/b/c",
            "data/a/c",
            "data/ab",
            "data/b",
            "data/bc/d",
        ] {
            n.take(name.as_bytes());
        }
        let named: Vec<String> = n.found.iter().map(|f| f.to_string()).collect();
        assert_eq!(named.len(), 2, "{named:?}");
        assert!(named[0].starts_with("data/a: an object, and objects below it"));
        assert!(named[1].starts_with("data/a/b: an object"));
    }

    #[test]
    fn an_object_named_data_is_no_payload_directory() {
        let url = ObjectUrl::parse(std::ffi::OsStr::new("s3://bkt/p"))
            .unwrap()
            .unwrap();
        let spools = Spools::default();
        let mut t = Taken::new(&spools);
        let _ = take(&url, &url.root_path(), &spools, &mut t, listed("p/data", 4));
        assert!(t.data_object && !t.data_seen && t.tags.is_empty());
    }
}
