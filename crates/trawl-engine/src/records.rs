//! A scan's per-file records, kept in path order in a [`Spool`]: each file encoded in a few
//! dozen bytes plus its path, in RAM up to the budget and in sorted runs on disk past it, and
//! read back at the end as the report's `files` and as manifest entries, in their documented
//! orders, without ever holding them all.

use std::io;
use std::ops::ControlFlow;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_manifest::Entry;
use trawl_report::{FileJson, FileList, FlvSummary, JsonPath};
use trawl_scan::FileRecord;
use trawl_spool::{Sorted, Spool};

use crate::names::ManifestNames;

/// One file read, as the records keep it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredFile {
    /// The file as found (under its root as given).
    pub path: PathBuf,
    /// Which of the scan's roots it was found under.
    pub root: usize,
    /// Bytes read.
    pub size: u64,
    /// Modification time: seconds since the epoch.
    pub mtime_sec: i64,
    /// And nanoseconds.
    pub mtime_nsec: i64,
    /// Inode, names of it, and bytes on disk (for a disk-usage export); `disk_bytes` is
    /// `u64::MAX` when the records were not asked to keep them.
    pub ino: u64,
    /// Names of the inode.
    pub nlink: u64,
    /// Bytes on disk.
    pub disk_bytes: u64,
    /// Each digest computed, by algorithm.
    pub digests: Vec<(Algorithm, Vec<u8>)>,
    /// The FLV lane's summary, for an FLV file.
    pub flv: Option<FlvSummary>,
}

impl StoredFile {
    /// A file read, with its FLV summary if it has one.
    pub fn of(rec: &FileRecord, flv: Option<FlvSummary>) -> StoredFile {
        StoredFile {
            path: rec.path.clone(),
            ..StoredFile::without_path(rec, flv)
        }
    }

    /// As [`StoredFile::of`] with an empty path (a spool keeps the path as the key).
    fn without_path(rec: &FileRecord, flv: Option<FlvSummary>) -> StoredFile {
        StoredFile {
            path: PathBuf::new(),
            root: rec.root,
            size: rec.size,
            mtime_sec: rec.mtime_sec,
            mtime_nsec: rec.mtime_nsec,
            ino: rec.ino,
            nlink: rec.nlink,
            disk_bytes: rec.disk_bytes,
            digests: rec.digests(),
            flv,
        }
    }

    /// The record of the report's `files` and of a JSON Lines stream.
    pub fn to_json(&self) -> FileJson {
        let mut digests = serde_json::Map::new();
        for (a, d) in &self.digests {
            digests.insert(a.name().to_string(), hex::encode(d).into());
        }
        FileJson {
            path: JsonPath::shown(&self.path),
            size: Some(self.size),
            mtime: Some(self.mtime_sec as f64 + self.mtime_nsec as f64 / 1e9),
            digests,
            skipped: None,
            error: None,
            flv: self.flv.clone(),
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&(self.root as u32).to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.mtime_sec.to_le_bytes());
        out.extend_from_slice(&(self.mtime_nsec as u32).to_le_bytes());
        // The inode, its names and its bytes on disk only when kept (for a disk-usage export):
        // 24 bytes a file that no other output wants.
        if self.disk_bytes == u64::MAX {
            out.push(0);
        } else {
            out.push(1);
            out.extend_from_slice(&self.ino.to_le_bytes());
            out.extend_from_slice(&self.nlink.to_le_bytes());
            out.extend_from_slice(&self.disk_bytes.to_le_bytes());
        }
        out.push(self.digests.len() as u8);
        for (a, d) in &self.digests {
            out.push(algorithm_code(*a));
            out.push(d.len() as u8);
            out.extend_from_slice(d);
        }
        if let Some(f) = &self.flv {
            serde_json::to_writer(&mut *out, f).expect("a summary serializes");
        }
    }

    fn decode(key: &[u8], v: &[u8]) -> io::Result<StoredFile> {
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "a scan record is damaged");
        let take = |v: &mut &[u8], n: usize| -> io::Result<Vec<u8>> {
            if v.len() < n {
                return Err(bad());
            }
            let (h, t) = v.split_at(n);
            *v = t;
            Ok(h.to_vec())
        };
        let mut v = v;
        let u32_at = |b: Vec<u8>| u32::from_le_bytes(b.try_into().expect("4 bytes"));
        let root = u32_at(take(&mut v, 4)?) as usize;
        let size = u64::from_le_bytes(take(&mut v, 8)?.try_into().expect("8 bytes"));
        let mtime_sec = i64::from_le_bytes(take(&mut v, 8)?.try_into().expect("8 bytes"));
        let mtime_nsec = i64::from(u32_at(take(&mut v, 4)?));
        let u64_at = |b: Vec<u8>| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let (ino, nlink, disk_bytes) = if take(&mut v, 1)?[0] == 1 {
            (
                u64_at(take(&mut v, 8)?),
                u64_at(take(&mut v, 8)?),
                u64_at(take(&mut v, 8)?),
            )
        } else {
            (0, 0, u64::MAX)
        };
        let n = take(&mut v, 1)?[0];
        let mut digests = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let h = take(&mut v, 2)?;
            let a = algorithm_of(h[0]).ok_or_else(bad)?;
            digests.push((a, take(&mut v, h[1] as usize)?));
        }
        let flv = if v.is_empty() {
            None
        } else {
            Some(serde_json::from_slice(v).map_err(|_| bad())?)
        };
        Ok(StoredFile {
            path: PathBuf::from(std::ffi::OsString::from_vec(key.to_vec())),
            root,
            size,
            mtime_sec,
            mtime_nsec,
            ino,
            nlink,
            disk_bytes,
            digests,
            flv,
        })
    }
}

/// The code of an algorithm in a record: its place in [`Algorithm::ALL`].
pub(crate) fn algorithm_code(a: Algorithm) -> u8 {
    Algorithm::ALL
        .iter()
        .position(|&x| x == a)
        .expect("every algorithm is in ALL") as u8
}

pub(crate) fn algorithm_of(code: u8) -> Option<Algorithm> {
    Algorithm::ALL.get(code as usize).copied()
}

/// Records being added during a scan.
pub struct RecordSink {
    spool: Spool,
    buf: Vec<u8>,
    temp_dir: PathBuf,
    budget: usize,
    /// False: no output wants the files one by one; they are only counted.
    keep: bool,
    /// Keep each file's inode, names and bytes on disk.
    disk_usage: bool,
    count: u64,
}

impl RecordSink {
    /// Up to `budget` bytes of records in RAM; past it, runs under `temp_dir`. With `keep`
    /// false the files are counted, not kept (nothing asked for them: no manifest, no JSON).
    pub fn new(temp_dir: &Path, budget: usize, keep: bool, disk_usage: bool) -> RecordSink {
        RecordSink {
            disk_usage,
            spool: Spool::new(temp_dir, budget),
            buf: Vec::new(),
            temp_dir: temp_dir.to_path_buf(),
            budget,
            keep,
            count: 0,
        }
    }

    /// Keeps one file's record (or only counts it, when records are not kept).
    pub fn add(&mut self, rec: &FileRecord, flv: Option<FlvSummary>) -> io::Result<()> {
        self.count += 1;
        if !self.keep {
            return Ok(());
        }
        // The path is the key, not part of the encoded value.
        let mut s = StoredFile::without_path(rec, flv);
        if !self.disk_usage {
            s.disk_bytes = u64::MAX;
        }
        s.encode(&mut self.buf);
        self.spool.push(rec.path.as_os_str().as_bytes(), &self.buf)
    }

    /// Adds the records another scan exported ([`Records::export`]): a cluster's shards, merged
    /// into one set.
    pub fn import(&mut self, bytes: &[u8]) -> io::Result<()> {
        let bad = || {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "exported scan records are damaged",
            )
        };
        let mut rest = bytes;
        let take = |rest: &mut &[u8]| -> io::Result<Vec<u8>> {
            let n = u32::from_le_bytes(rest.get(..4).ok_or_else(bad)?.try_into().expect("4 bytes"))
                as usize;
            let v = rest.get(4..4 + n).ok_or_else(bad)?.to_vec();
            *rest = &rest[4 + n..];
            Ok(v)
        };
        while !rest.is_empty() {
            let (k, v) = (take(&mut rest)?, take(&mut rest)?);
            StoredFile::decode(&k, &v)?;
            self.count += 1;
            if self.keep {
                self.spool.push(&k, &v)?;
            }
        }
        Ok(())
    }

    /// Every record kept, sorted by path, from RAM and the runs on disk.
    pub fn finish(self, roots: &[PathBuf]) -> io::Result<Records> {
        Ok(Records {
            count: self.count,
            sorted: Arc::new(self.spool.finish()?),
            by_name: None,
            names: ManifestNames::new(roots),
            roots: roots.to_vec(),
            temp_dir: self.temp_dir,
            budget: self.budget,
        })
    }
}

/// Every file a scan read, in path order (bytes), on disk past the budget (or only their
/// number, when the scan kept none).
pub struct Records {
    count: u64,
    sorted: Arc<Sorted>,
    /// The manifest entries, when their order (by manifest name) is not the paths' order.
    by_name: Option<Arc<Sorted>>,
    names: ManifestNames,
    roots: Vec<PathBuf>,
    temp_dir: PathBuf,
    budget: usize,
}

impl std::fmt::Debug for Records {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Records({} files)", self.count)
    }
}

impl Records {
    /// The files read (kept or not).
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether no file was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Whether some records went to disk.
    pub fn spilled(&self) -> bool {
        self.sorted.spilled()
    }

    /// Calls `f` with each file in path order.
    pub fn for_each<E: From<io::Error>>(
        &self,
        mut f: impl FnMut(StoredFile) -> Result<(), E>,
    ) -> Result<(), E> {
        self.sorted.for_each(|k, v| f(StoredFile::decode(k, v)?))
    }

    /// Every record, in path order, as length-prefixed (path, record) pairs for
    /// [`RecordSink::import`] on another machine.
    pub fn export(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        self.sorted.for_each(|k, v| {
            for part in [k, v] {
                out.extend_from_slice(&(part.len() as u32).to_le_bytes());
                out.extend_from_slice(part);
            }
            Ok::<_, io::Error>(())
        })?;
        Ok(out)
    }

    /// The report's `files`, read back as they are written.
    pub fn file_list(&self) -> io::Result<FileList> {
        let mut it = self.sorted.iter()?;
        Ok(FileList::stream(Box::new(move || {
            it.next_record()?
                .map(|(k, v)| StoredFile::decode(k, v).map(|s| s.to_json()))
                .transpose()
        })))
    }

    /// Calls `f` with each manifest entry, sorted by name, until it breaks: `Break` if it did.
    pub fn for_each_entry<E: From<io::Error>>(
        &mut self,
        mut f: impl FnMut(&Entry) -> Result<ControlFlow<()>, E>,
    ) -> Result<ControlFlow<()>, E> {
        let entry = |names: &ManifestNames, s: StoredFile| Entry {
            path: names.name(&s.path),
            size: Some(s.size),
            digests: s.digests,
            ..Entry::default()
        };
        if self.names.keeps_order(&self.roots) {
            let mut it = self.sorted.iter()?;
            while let Some((k, v)) = it.next_record()? {
                if f(&entry(&self.names, StoredFile::decode(k, v)?))?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            return Ok(ControlFlow::Continue(()));
        }
        if self.by_name.is_none() {
            // A root spelled `./x` next to others: the names' order is not the paths'.
            let mut spool = Spool::new(&self.temp_dir, self.budget);
            let names = &self.names;
            let mut pair = Vec::new();
            self.sorted.for_each(|k, v| {
                pair.clear();
                pair.extend_from_slice(&(k.len() as u32).to_le_bytes());
                pair.extend_from_slice(k);
                pair.extend_from_slice(v);
                let name = names.name(Path::new(std::ffi::OsStr::from_bytes(k)));
                spool.push(&name, &pair)
            })?;
            self.by_name = Some(Arc::new(spool.finish()?));
        }
        let mut it = self.by_name.as_ref().expect("made above").iter()?;
        while let Some((name, kv)) = it.next_record()? {
            let s = split_pair(kv)?;
            let mut e = entry(&self.names, StoredFile::decode(s.0, s.1)?);
            e.path = name.to_vec();
            if f(&e)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }
}

/// The path and the record of a by-name spool's value: `[path length][path][record]`.
fn split_pair(kv: &[u8]) -> io::Result<(&[u8], &[u8])> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "a scan record is damaged");
    let n = u32::from_le_bytes(kv.get(..4).ok_or_else(bad)?.try_into().expect("4 bytes")) as usize;
    let rest = &kv[4..];
    if rest.len() < n {
        return Err(bad());
    }
    Ok(rest.split_at(n))
}
