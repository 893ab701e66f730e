//! The client's side of the cluster's walk: listing tasks' results taken in ([`Walk`]), and the
//! files found cut into shards, a multiply linked file's names kept in one shard.

use std::collections::{HashMap, HashSet};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use trawl_report::FileJson;

use crate::listing::{ListedFile, Listing};

/// One shard of a cluster scan: its files (every name of a multiply linked file in the shard
/// of its first name), named by a key that the same files always give.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardPlan {
    /// A name the same files always give (checkpoints are kept under it).
    pub key: String,
    /// The root the files are under (pinned roots are read where they are).
    pub root: usize,
    /// Its files.
    pub files: Vec<PathBuf>,
    /// Their bytes in all.
    pub bytes: u64,
}

/// How big shards are: at most these, and small enough that each worker gets several.
#[derive(Debug, Clone, Copy)]
pub struct ShardBounds {
    /// Bytes in a shard at most.
    pub max_bytes: u64,
    /// Files in a shard at most.
    pub max_files: usize,
    /// Workers the shards are for.
    pub workers: usize,
}

impl ShardBounds {
    /// The most files and bytes one shard may hold when `files` files of `bytes` bytes in all
    /// are cut: the bounds, and a quarter of a worker's even share (with 5% of room for the
    /// packing to make the shards even), at least 100 files and 64 MiB, so that the slowest
    /// cannot hold the run back and the last round keeps every worker busy. A scan's shards
    /// and an audit's read tasks are cut by this one rule.
    pub fn caps(&self, files: u64, bytes: u64) -> (usize, u64) {
        let quarter = |n: u64| {
            let n = u128::from(n) * 105 / (400 * self.workers.max(1) as u128);
            u64::try_from(n).unwrap_or(u64::MAX)
        };
        let max_bytes = self.max_bytes.min(quarter(bytes).max(64 << 20));
        let max_files = u64::try_from(self.max_files)
            .unwrap_or(u64::MAX)
            .min(quarter(files).max(100));
        (usize::try_from(max_files).unwrap_or(usize::MAX), max_bytes)
    }
}

/// What the listing tasks found so far: the files under each root (the outputs' own files
/// left out), the worker that listed each, and the entries skipped or failed, in the order the
/// listings came in.
#[derive(Debug, Default)]
pub struct Walk {
    /// (device, inode) of the outputs: never read.
    excluded: HashSet<(u64, u64)>,
    files: Vec<(usize, ListedFile)>,
    /// The worker that listed each file of `files` (its place in `listers`).
    listed_by: Vec<u32>,
    /// The workers the listings came from, as failures name them (None: not said).
    listers: Vec<Option<String>>,
    /// `files`' places in the order of their names as reports spell them, for
    /// [`Walk::listed_by`]: made at its first call (a failure to explain), 4 bytes a file.
    by_name: OnceLock<Vec<u32>>,
    problems: Listing,
    listings: usize,
}

/// A path's bytes as reports spell it ([`trawl_report::JsonPath::shown`]): without a leading
/// `./`.
fn shown(p: &Path) -> &[u8] {
    let mut b = p.as_os_str().as_bytes();
    while let Some(rest) = b.strip_prefix(b"./") {
        b = rest;
    }
    if b.is_empty() { b"." } else { b }
}

impl Walk {
    /// An empty walk that will leave out the files `excluded` names (device, inode).
    pub fn new(excluded: impl IntoIterator<Item = (u64, u64)>) -> Walk {
        Walk {
            excluded: excluded.into_iter().collect(),
            ..Walk::default()
        }
    }

    /// Takes one listing task's result for root number `root`, listed by `worker`.
    pub fn add(&mut self, root: usize, mut listing: Listing, worker: Option<&str>) {
        self.listings += 1;
        FileJson::met_by(&mut listing.failed, worker);
        let who = match self.listers.iter().position(|w| w.as_deref() == worker) {
            Some(i) => i,
            None => {
                self.listers.push(worker.map(str::to_string));
                self.listers.len() - 1
            }
        } as u32;
        for f in listing.files {
            if !self.excluded.contains(&(f.dev, f.ino)) {
                self.files.push((root, f));
                self.listed_by.push(who);
            }
        }
        // Files came in: the order by name is made again when next asked for.
        self.by_name = OnceLock::new();
        self.problems.skipped.extend(listing.skipped);
        self.problems.failed.extend(listing.failed);
        self.problems.excluded.merge(listing.excluded);
    }

    /// Files found so far.
    pub fn files(&self) -> usize {
        self.files.len()
    }

    /// Listing results taken so far.
    pub fn listings(&self) -> usize {
        self.listings
    }

    /// The worker that listed the file a report names `name` (the bytes of its path as reports
    /// spell it), when the walk found it and the listing said which worker it was.
    pub fn listed_by(&self, name: &[u8]) -> Option<&str> {
        let path = |i: u32| shown(&self.files[i as usize].1.path);
        let order = self.by_name.get_or_init(|| {
            let Ok(n) = u32::try_from(self.files.len()) else {
                return Vec::new(); // more than 4 billion files: none is looked up
            };
            let mut order: Vec<u32> = (0..n).collect();
            order.sort_unstable_by(|a, b| path(*a).cmp(path(*b)));
            order
        });
        let at = order.binary_search_by(|i| path(*i).cmp(name)).ok()?;
        self.listers[self.listed_by[order[at] as usize] as usize].as_deref()
    }

    /// The skipped, failed and excluded entries, for the report.
    pub fn problems(&self) -> &Listing {
        &self.problems
    }

    /// The files cut into shards, root by root, each within [`ShardBounds::caps`]. A multiply linked file is read once, by the
    /// shard of its first name in byte order, which carries its other names too (its data is
    /// counted once, as one machine counts it).
    pub fn shards(&self, bounds: ShardBounds) -> Vec<ShardPlan> {
        let total: u64 = self.files.iter().map(|(_, f)| f.size).sum();
        let (max_files, max_bytes) = bounds.caps(self.files.len() as u64, total);
        let roots = self.files.iter().map(|(r, _)| r + 1).max().unwrap_or(0);
        let mut out = Vec::new();
        for root in 0..roots {
            let mut mine: Vec<&ListedFile> = self
                .files
                .iter()
                .filter(|(r, _)| *r == root)
                .map(|(_, f)| f)
                .collect();
            mine.sort_by(|a, b| {
                a.path
                    .as_os_str()
                    .as_bytes()
                    .cmp(b.path.as_os_str().as_bytes())
            });
            let mut first: HashMap<(u64, u64), &PathBuf> = HashMap::new();
            let mut extra: HashMap<&PathBuf, Vec<PathBuf>> = HashMap::new();
            let mut read = Vec::new();
            for f in mine {
                if f.nlink > 1 {
                    if let Some(p) = first.get(&(f.dev, f.ino)) {
                        extra.entry(*p).or_default().push(f.path.clone());
                        continue;
                    }
                    first.insert((f.dev, f.ino), &f.path);
                }
                read.push((f.path.clone(), f.size));
            }
            for s in crate::pack::pack(read, max_files, max_bytes) {
                let key = s.key();
                let mut files = s.files;
                let mut others = Vec::new();
                for p in &files {
                    others.extend(extra.get(p).into_iter().flatten().cloned());
                }
                files.append(&mut others);
                out.push(ShardPlan {
                    key,
                    root,
                    files,
                    bytes: s.bytes,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, size: u64, ino: u64, nlink: u64) -> ListedFile {
        ListedFile {
            path: path.into(),
            size,
            dev: 1,
            ino,
            nlink,
        }
    }

    fn listing(files: Vec<ListedFile>) -> Listing {
        Listing {
            files,
            ..Listing::default()
        }
    }

    /// Every name of a multiply linked file goes with its first name (in byte order), read
    /// once; the outputs' own files are left out; each root's files are shards of their own.
    #[test]
    fn a_linked_files_names_go_together_and_the_outputs_are_left_out() {
        let mut w = Walk::new([(1, 99)]);
        w.add(
            0,
            listing(vec![
                file("r/b", 10, 7, 2),
                file("r/out.json", 5, 99, 1),
                file("r/c", 20, 8, 1),
            ]),
            None,
        );
        w.add(0, listing(vec![file("r/a", 10, 7, 2)]), None);
        w.add(1, listing(vec![file("s/x", 1, 9, 1)]), None);
        assert_eq!((w.files(), w.listings()), (4, 3));
        let shards = w.shards(ShardBounds {
            max_bytes: 1 << 30,
            max_files: 10_000,
            workers: 1,
        });
        assert_eq!(shards.len(), 2);
        let names = |s: &ShardPlan| {
            let mut v: Vec<_> = s.files.iter().map(|p| p.display().to_string()).collect();
            v.sort();
            v
        };
        assert_eq!((shards[0].root, shards[1].root), (0, 1));
        assert_eq!(names(&shards[0]), ["r/a", "r/b", "r/c"]);
        // The data of r/a and r/b is one file's: counted once.
        assert_eq!(shards[0].bytes, 30);
        assert_eq!(names(&shards[1]), ["s/x"]);
    }

    /// Each file is known by the worker that listed it, by its name as reports spell it.
    #[test]
    fn each_file_is_known_by_the_worker_that_listed_it() {
        let mut w = Walk::new([]);
        w.add(
            0,
            listing(vec![file("./r/b", 1, 1, 1), file("r/a", 1, 2, 1)]),
            Some("w1"),
        );
        w.add(
            0,
            listing(vec![file("r/c", 1, 3, 1)]),
            Some("w2 (tcp://h:1)"),
        );
        w.add(0, listing(vec![file("r/d", 1, 4, 1)]), None);
        assert_eq!(w.listed_by(b"r/a"), Some("w1"));
        assert_eq!(w.listed_by(b"r/b"), Some("w1"));
        assert_eq!(w.listed_by(b"r/c"), Some("w2 (tcp://h:1)"));
        assert_eq!(w.listed_by(b"r/d"), None);
        assert_eq!(w.listed_by(b"r/e"), None);
        // Files that come in later are found too.
        w.add(
            0,
            listing(vec![file("r/0", 1, 5, 1)]),
            Some("w2 (tcp://h:1)"),
        );
        assert_eq!(w.listed_by(b"r/0"), Some("w2 (tcp://h:1)"));
    }

    /// The caps: a quarter of a worker's share with 5% of room, within the bounds, never under
    /// 100 files and 64 MiB; the arithmetic done by hand here.
    #[test]
    fn a_shards_caps_are_a_quarter_of_a_workers_share_within_the_bounds() {
        let b = |max_bytes, max_files, workers| ShardBounds {
            max_bytes,
            max_files,
            workers,
        };
        // 10,000 files of 100 GiB on 4 workers: 10,000 x 1.05 / 16 = 656 files, and
        // 100 GiB x 1.05 / 16 = 6.5625 GiB.
        assert_eq!(
            b(8 << 30, 10_000, 4).caps(10_000, 100 << 30),
            (656, 7_046_430_720)
        );
        // The bounds win where they are smaller.
        assert_eq!(b(1 << 30, 500, 4).caps(10_000, 100 << 30), (500, 1 << 30));
        // A small tree: the floors (100 files, 64 MiB), unless the bounds are smaller yet.
        assert_eq!(b(8 << 30, 10_000, 8).caps(10, 1000), (100, 64 << 20));
        assert_eq!(b(1000, 7, 8).caps(10, 1 << 40), (7, 1000));
        // No workers counts as one; sizes past u64 after the arithmetic do not overflow.
        assert_eq!(b(u64::MAX, usize::MAX, 0).caps(400, 400 << 20).0, 105);
        assert_eq!(
            b(u64::MAX, 10, 1).caps(0, u64::MAX).1,
            (u128::from(u64::MAX) * 105 / 400) as u64
        );
    }

    /// Shards are small enough for every worker to get four (here, 100 files each at least).
    #[test]
    fn shards_are_a_quarter_of_a_workers_share() {
        let mut w = Walk::new([]);
        w.add(
            0,
            listing(
                (0..1000)
                    .map(|i| file(&format!("f{i:04}"), 1, i, 1))
                    .collect(),
            ),
            None,
        );
        let shards = w.shards(ShardBounds {
            max_bytes: 1 << 30,
            max_files: 10_000,
            workers: 2,
        });
        assert!(
            shards.iter().all(|s| s.files.len() <= 131),
            "{}",
            shards.len()
        );
        assert_eq!(shards.iter().map(|s| s.files.len()).sum::<usize>(), 1000);
        assert_eq!(shards.len(), 8);
    }
}
