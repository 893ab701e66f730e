//! Digests known from an earlier read (`scan --reuse`): for each root, every file's path below
//! it, what the file was when it was read (its [`Identity`]) and its digests, in a compact table
//! indexed by a 128-bit hash of the path (open addressing: one or two memory reads a lookup,
//! where a binary search of a large table missed the cache at every step). A file the scan
//! finds still as it was is taken from here instead of being read: the readers look it up
//! before they open it, and look at it (one `fstatat`) only when the table has its path.
//!
//! Memory: 64 bytes a file plus its digests (32 for SHA-256: 96 bytes, 96 MB for 10^6 files),
//! held for the scan.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use trawl_digest::Algorithm;
use trawl_read::Stamp;
use trawl_walk::FileEntry;

use crate::{FileRecord, LaneOutput};

/// What a file was when its digests were computed: what must be unchanged for them to stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// Device.
    pub dev: u64,
    /// Inode number.
    pub ino: u64,
}

/// One file of a root's table: its path's hash and its identity; its digests are at the same
/// index of the table's digest bytes.
#[derive(Debug, Clone, Copy)]
struct Row {
    key: (u64, u64),
    id: Identity,
}

/// One root's files and their digests, `width` bytes each, in the same order, and the index:
/// a power-of-two number of slots, each empty (0) or a row's index plus one, a row at the
/// first free slot from its key's low bits on.
#[derive(Debug, Default)]
struct Table {
    rows: Vec<Row>,
    digests: Vec<u8>,
    slots: Vec<u32>,
}

impl Table {
    /// Indexes the rows, at most half the slots taken.
    fn index(&mut self) {
        let n = (self.rows.len() * 2).next_power_of_two().max(2);
        self.slots = vec![0; n];
        let mask = n - 1;
        for (i, r) in self.rows.iter().enumerate() {
            let mut s = r.key.0 as usize & mask;
            while self.slots[s] != 0 {
                s = (s + 1) & mask;
            }
            self.slots[s] = i as u32 + 1;
        }
    }

    /// The rows of key `k` (a path held twice, under two catalog roots, has two).
    fn find(&self, k: (u64, u64)) -> impl Iterator<Item = usize> + '_ {
        let mask = self.slots.len().wrapping_sub(1);
        let mut s = k.0 as usize & mask;
        std::iter::from_fn(move || {
            loop {
                let v = *self.slots.get(s)? as usize;
                if v == 0 {
                    return None;
                }
                s = (s + 1) & mask;
                if self.rows[v - 1].key == k {
                    return Some(v - 1);
                }
            }
        })
    }
}

/// How many files a scan took from a [`Known`], and how many it had that were no longer as
/// they were (read again).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReuseCounts {
    /// Files taken, not read.
    pub taken: u64,
    /// Files it held whose size, times or identity had changed since (or that were no longer
    /// regular files): read.
    pub changed: u64,
}

/// Digests known from an earlier read, by root and path below it.
pub struct Known {
    algorithms: Vec<Algorithm>,
    width: usize,
    tables: Vec<Table>,
    ignore_inode: bool,
    ignore_ctime: bool,
    taken: AtomicU64,
    changed: AtomicU64,
}

impl std::fmt::Debug for Known {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Known")
            .field("algorithms", &self.algorithms)
            .field("files", &self.len())
            .field("counts", &self.counts())
            .finish()
    }
}

/// The key of a path below its root.
fn key(rel: &[u8]) -> (u64, u64) {
    let h = xxhash_rust::xxh3::xxh3_128(rel);
    (h as u64, (h >> 64) as u64)
}

/// Collects the files of a [`Known`], in any order.
pub struct KnownBuilder {
    algorithms: Vec<Algorithm>,
    width: usize,
    tables: Vec<Table>,
}

impl KnownBuilder {
    /// A table for `roots` roots, of digests by `algorithms` (in that order).
    pub fn new(algorithms: &[Algorithm], roots: usize) -> KnownBuilder {
        KnownBuilder {
            algorithms: algorithms.to_vec(),
            width: algorithms.iter().map(|a| a.output_len()).sum(),
            tables: std::iter::repeat_with(Table::default).take(roots).collect(),
        }
    }

    /// The bytes of one file's digests, all the algorithms' concatenated in their order.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Adds the file `rel` below root `root` as it was (`id`) and its digests (`width` bytes,
    /// in the algorithms' order); anything else is ignored.
    pub fn push(&mut self, root: usize, rel: &[u8], id: Identity, digests: &[u8]) {
        if digests.len() != self.width {
            return;
        }
        if let Some(t) = self.tables.get_mut(root)
            && t.rows.len() < u32::MAX as usize - 1
        {
            t.rows.push(Row { key: key(rel), id });
            t.digests.extend_from_slice(digests);
        }
    }

    /// The table, indexed; `ignore_inode` leaves device and inode out of the rule, and
    /// `ignore_ctime` the status change time.
    pub fn build(mut self, ignore_inode: bool, ignore_ctime: bool) -> Known {
        for t in &mut self.tables {
            t.rows.shrink_to_fit();
            t.digests.shrink_to_fit();
            t.index();
        }
        Known {
            algorithms: self.algorithms,
            width: self.width,
            tables: self.tables,
            ignore_inode,
            ignore_ctime,
            taken: AtomicU64::new(0),
            changed: AtomicU64::new(0),
        }
    }
}

impl Known {
    /// Files held, all roots together.
    pub fn len(&self) -> usize {
        self.tables.iter().map(|t| t.rows.len()).sum()
    }

    /// Whether it holds no file.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the scans that asked it took and found changed, so far.
    pub fn counts(&self) -> ReuseCounts {
        ReuseCounts {
            taken: self.taken.load(Ordering::Relaxed),
            changed: self.changed.load(Ordering::Relaxed),
        }
    }

    /// Whether a file now (`now`) is what it was (`then`) under the rule (a time past 2262
    /// wraps in nanoseconds, as the audit that recorded it wrapped it).
    fn unchanged(&self, then: &Identity, now: &Stamp) -> bool {
        then.size == now.size
            && then.mtime_ns
                == now
                    .mtime_sec
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(now.mtime_nsec)
            && (self.ignore_ctime || then.ctime_ns == now.ctime_ns)
            && (self.ignore_inode || (then.dev == now.dev && then.ino == now.ino))
    }

    /// The record of `entry` (found under `root`, the path its walk started from) with its
    /// known digests, where it is held and still as it was; None: it is to be read.
    pub fn take(&self, entry: &FileEntry, root: &Path) -> Option<FileRecord> {
        let table = self.tables.get(entry.root)?;
        let rel = entry.path.strip_prefix(root).ok()?.as_os_str().as_bytes();
        let k = key(rel);
        table.find(k).next()?;
        let found = trawl_read::look(entry.dir.as_deref(), &entry.path).and_then(|l| {
            table
                .find(k)
                .find(|&i| self.unchanged(&table.rows[i].id, &l.stamp))
                .map(|i| (i, l))
        });
        let Some((i, l)) = found else {
            self.changed.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        self.taken.fetch_add(1, Ordering::Relaxed);
        let mut at = i * self.width;
        let outputs = self
            .algorithms
            .iter()
            .map(|a| {
                let d = table.digests[at..at + a.output_len()].to_vec();
                at += a.output_len();
                LaneOutput::Digest(*a, d)
            })
            .collect();
        let s = l.stamp;
        Some(FileRecord {
            path: entry.path.clone(),
            root: entry.root,
            size: s.size,
            mtime_sec: s.mtime_sec,
            mtime_nsec: s.mtime_nsec,
            dev: s.dev,
            ino: s.ino,
            ctime_ns: s.ctime_ns,
            nlink: l.nlink,
            disk_bytes: l.disk_bytes,
            outputs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    fn identity(p: &Path) -> Identity {
        let md = std::fs::metadata(p).unwrap();
        Identity {
            size: md.len(),
            mtime_ns: md.mtime() * 1_000_000_000 + md.mtime_nsec(),
            ctime_ns: md.ctime() * 1_000_000_000 + md.ctime_nsec(),
            dev: md.dev(),
            ino: md.ino(),
        }
    }

    /// A file held and unchanged is taken with its digests in the algorithms' order; one whose
    /// size, time or inode differs, or that is not held, is not; the rule's switches leave
    /// the inode and the ctime out.
    #[test]
    fn a_file_is_taken_only_while_it_is_as_it_was() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        std::fs::write(root.join("a"), b"abc").unwrap();
        std::fs::write(root.join("b"), b"xyz").unwrap();
        let algs = [Algorithm::Md5, Algorithm::Sha1];
        let digests: Vec<u8> = (0..36).collect();
        let known = |id_b: Identity, inode: bool, ctime: bool| {
            let mut b = KnownBuilder::new(&algs, 1);
            assert_eq!(b.width(), 36);
            b.push(0, b"a", identity(&root.join("a")), &digests);
            b.push(0, b"b", id_b, &digests);
            b.push(0, b"short", identity(&root.join("a")), &digests[..4]);
            b.build(inode, ctime)
        };
        let entry = |name: &str| FileEntry {
            root: 0,
            ..FileEntry::named(&root.join(name))
        };
        let k = known(identity(&root.join("b")), false, false);
        assert_eq!(k.len(), 2, "a row without every digest is not held");
        let rec = k.take(&entry("a"), root).expect("unchanged: taken");
        let d = rec.digests();
        assert_eq!(d[0], (Algorithm::Md5, digests[..16].to_vec()));
        assert_eq!(d[1], (Algorithm::Sha1, digests[16..].to_vec()));
        assert_eq!(rec.size, 3);
        assert!(k.take(&entry("c"), root).is_none(), "not held");
        let b = identity(&root.join("b"));
        for changed in [
            Identity { size: 4, ..b },
            Identity { mtime_ns: 1, ..b },
            Identity { ctime_ns: 1, ..b },
            Identity { ino: 1, ..b },
            Identity { dev: 1, ..b },
        ] {
            assert!(
                known(changed, false, false)
                    .take(&entry("b"), root)
                    .is_none()
            );
        }
        let k = known(Identity { ctime_ns: 1, ..b }, false, true);
        assert!(k.take(&entry("b"), root).is_some(), "ctime left out");
        let k = known(
            Identity {
                dev: 9,
                ino: 1,
                ..b
            },
            true,
            false,
        );
        assert!(
            k.take(&entry("b"), root).is_some(),
            "device and inode left out"
        );
        let k = known(Identity { size: 4, ..b }, true, true);
        assert!(k.take(&entry("b"), root).is_none(), "size always counts");
        assert_eq!(
            k.counts(),
            ReuseCounts {
                taken: 0,
                changed: 1
            }
        );
    }
}
