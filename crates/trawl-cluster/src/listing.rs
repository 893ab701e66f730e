//! The cluster's walk, a directory at a time: a root or one directory listed as `trawl scan`'s
//! walk lists it, with what was skipped or failed as the report records it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use trawl_report::{ErrorJson, ExcludedJson, ExcludedTally, FileJson, JsonPath};
use trawl_walk::{SkipKind, WalkItem};

use crate::{ClusterError, ScanWork, bytes};

/// A regular file found by a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedFile {
    /// The file as found.
    pub path: PathBuf,
    /// Its size when listed.
    pub size: u64,
    /// Device it is on.
    pub dev: u64,
    /// Its inode number.
    pub ino: u64,
    /// Its number of names (hard links).
    pub nlink: u64,
}

/// A directory's entries for the cluster's walk.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Listing {
    /// Regular files found.
    pub files: Vec<ListedFile>,
    /// Subdirectories to list next.
    pub dirs: Vec<PathBuf>,
    /// Entries not read (not regular files) and entries that could not be listed, as the
    /// report records them.
    pub skipped: Vec<FileJson>,
    /// Entries that could not be listed or inspected.
    pub failed: Vec<FileJson>,
    /// What the user's rules left out (counts, and the first entries by path; no rules).
    pub excluded: ExcludedJson,
}

/// Root number `idx` looked at as the walk looks at a root: a file, something skipped, or a
/// directory to list.
pub fn list_root(work: &ScanWork, idx: usize) -> Result<Listing, ClusterError> {
    let root = work.cfg.roots.get(idx).ok_or(ClusterError::NoRoot(idx))?;
    let mut out = Listing::default();
    match std::fs::symlink_metadata(root) {
        // As the local walk words a root it cannot look at.
        Err(source) => {
            let e = trawl_walk::WalkError::Io {
                path: root.clone(),
                source,
            };
            out.failed
                .push(problem(root, None, Some(&e.to_string()), "walk"))
        }
        Ok(md) => {
            let target = if md.file_type().is_symlink() {
                std::fs::metadata(root).ok()
            } else {
                Some(md)
            };
            match target {
                None => out
                    .skipped
                    .push(problem(root, Some(SkipKind::Symlink), None, "")),
                Some(md) if md.is_file() => out.files.push(ListedFile {
                    path: root.clone(),
                    size: md.len(),
                    dev: md.dev(),
                    ino: md.ino(),
                    nlink: md.nlink(),
                }),
                Some(md) if md.is_dir() => out.dirs.push(root.clone()),
                Some(md) => {
                    out.skipped
                        .push(problem(root, Some(SkipKind::of(&md.file_type())), None, ""))
                }
            }
        }
    }
    Ok(out)
}

/// Lists one directory of root number `idx`.
pub fn list_dir(work: &ScanWork, idx: usize, dir: &Path) -> Result<Listing, ClusterError> {
    let root = work.cfg.roots.get(idx).ok_or(ClusterError::NoRoot(idx))?;
    let opts = &work.cfg.walk;
    let root_dev = if opts.one_file_system {
        std::fs::metadata(root).ok().map(|m| m.dev())
    } else {
        None
    };
    let l = trawl_walk::list_directory(idx, root, dir, opts, root_dev, &trawl_stop::Stop::new());
    let mut out = Listing {
        dirs: l.dirs,
        ..Listing::default()
    };
    let mut excluded = ExcludedTally::default();
    for item in l.items {
        add_item(&mut out, &mut excluded, item, &|p| {
            std::fs::symlink_metadata(p).map_or(1, |m| m.nlink())
        });
    }
    out.excluded = excluded.finish(&[], &[]);
    Ok(out)
}

/// A walk's item into a listing: a file (its names counted by `nlink`), an entry skipped or
/// failed as the report records it, an entry excluded counted in `excluded`.
pub(crate) fn add_item(
    out: &mut Listing,
    excluded: &mut ExcludedTally,
    item: WalkItem,
    nlink: &dyn Fn(&Path) -> u64,
) {
    match item {
        WalkItem::File(f) => {
            let nlink = nlink(&f.path);
            out.files.push(ListedFile {
                path: f.path,
                size: f.size,
                dev: f.dev,
                ino: f.ino,
                nlink,
            });
        }
        WalkItem::Skipped { path, kind } => out.skipped.push(problem(&path, Some(kind), None, "")),
        WalkItem::Error(e) => {
            let path = e.path().map(Path::to_path_buf).unwrap_or_default();
            out.failed
                .push(problem(&path, None, Some(&e.to_string()), "walk"))
        }
        WalkItem::Excluded(x) => excluded.add(
            &x.path,
            x.kind.name(),
            x.size,
            x.why.pattern(),
            x.why.holds(),
        ),
    }
}

/// A listing task: root number `idx` (`dirs` None) or each of `dirs`, depth first, until
/// `budget`'s directories or files are listed; the directories not listed yet are the
/// result's `dirs`, for the next tasks (for `s3://` roots, a prefix's levels: see
/// `objects.rs`). Many directories a task: a task costs the scheduler
/// milliseconds, a directory microseconds.
pub fn list_task(
    work: &ScanWork,
    idx: usize,
    dirs: Option<Vec<PathBuf>>,
    budget: ListBudget,
) -> Result<Listing, ClusterError> {
    if let Some(objects) = &work.objects {
        #[cfg(feature = "s3")]
        return crate::objects::list_task(work, objects, idx, dirs, budget);
        #[cfg(not(feature = "s3"))]
        match **objects {}
    }
    let mut out = Listing::default();
    let (_, rest) = budgeted(dirs, budget, |d| {
        let l = match d {
            None => list_root(work, idx)?,
            Some(d) => list_dir(work, idx, &d)?,
        };
        // Excluded entries travel too, each a name: they count towards the task's budget.
        let found = l.files.len() + l.excluded.entries() as usize;
        out.files.extend(l.files);
        out.skipped.extend(l.skipped);
        out.failed.extend(l.failed);
        out.excluded.merge(l.excluded);
        Ok::<_, ClusterError>(((), l.dirs, found))
    })?;
    out.dirs = rest;
    Ok(out)
}

/// The budget of one listing task, the same for a scan's and an audit's: lists the root (`dirs`
/// None) or each of `dirs` with `list_one`, depth first (a directory's subdirectories before
/// its next sibling), until `budget.dirs` directories or `budget.files` files are listed.
/// `list_one` returns what it made, the subdirectories it found and how many files. Returns
/// what each listing made, in order, and the directories left, in the order they would have
/// been listed.
pub(crate) fn budgeted<T, E>(
    dirs: Option<Vec<PathBuf>>,
    budget: ListBudget,
    mut list_one: impl FnMut(Option<PathBuf>) -> Result<(T, Vec<PathBuf>, usize), E>,
) -> Result<(Vec<T>, Vec<PathBuf>), E> {
    let mut todo: Vec<Option<PathBuf>> = match dirs {
        None => vec![None],
        Some(d) => d.into_iter().rev().map(Some).collect(),
    };
    let (mut made, mut listed, mut files) = (Vec::new(), 0, 0);
    while listed < budget.dirs && files < budget.files {
        let Some(d) = todo.pop() else { break };
        let (one, subdirs, found) = list_one(d)?;
        listed += 1;
        files += found;
        made.push(one);
        todo.extend(subdirs.into_iter().rev().map(Some));
    }
    Ok((made, todo.into_iter().rev().flatten().collect()))
}

/// Directories handed to one listing task at most.
const LIST_BATCH: usize = 32;

/// How many of the `left` directories a listing task handed back go to each next task, for
/// `workers` workers: an even share each, so that every worker has one while the tree is
/// narrow, at most 32 a task (one task's [`ListBudget`] goes on into what it finds), at least
/// one. A scan's and an audit's listings are handed out by this one rule.
pub fn listing_batch(left: usize, workers: usize) -> usize {
    left.div_ceil(workers.max(1)).clamp(1, LIST_BATCH)
}

/// How much one listing task lists at most.
#[derive(Debug, Clone, Copy)]
pub struct ListBudget {
    /// Directories listed.
    pub dirs: usize,
    /// Files found (a directory is listed whole: one task may find more).
    pub files: usize,
}

impl Default for ListBudget {
    fn default() -> Self {
        ListBudget {
            dirs: 256,
            files: 50_000,
        }
    }
}

/// A listing on the wire: names as bytes (whatever their encoding), the report records as
/// JSON (as the report has them).
#[derive(Serialize, Deserialize)]
struct WireListing {
    files: Vec<(Vec<u8>, u64, u64, u64, u64)>,
    dirs: Vec<Vec<u8>>,
    skipped: Vec<u8>,
    failed: Vec<u8>,
    excluded: Vec<u8>,
}

impl Listing {
    /// The listing as one bytes object (a task's result: one frame, however many names).
    pub fn encode(&self) -> Vec<u8> {
        let w = WireListing {
            files: self
                .files
                .iter()
                .map(|f| (bytes(&f.path), f.size, f.dev, f.ino, f.nlink))
                .collect(),
            dirs: self.dirs.iter().map(|d| bytes(d)).collect(),
            skipped: serde_json::to_vec(&self.skipped).expect("records encode"),
            failed: serde_json::to_vec(&self.failed).expect("records encode"),
            excluded: serde_json::to_vec(&self.excluded).expect("records encode"),
        };
        postcard::to_stdvec(&w).expect("a listing encodes")
    }

    /// A listing from [`Listing::encode`]'s bytes.
    pub fn decode(bytes: &[u8]) -> Result<Listing, ClusterError> {
        let w: WireListing =
            postcard::from_bytes(bytes).map_err(|e| ClusterError::wire("a listing", e))?;
        let records = |b: &[u8]| {
            serde_json::from_slice::<Vec<FileJson>>(b)
                .map_err(|e| ClusterError::wire("a listing's records", e))
        };
        Ok(Listing {
            files: w
                .files
                .into_iter()
                .map(|(path, size, dev, ino, nlink)| ListedFile {
                    path: crate::path(path),
                    size,
                    dev,
                    ino,
                    nlink,
                })
                .collect(),
            dirs: w.dirs.into_iter().map(crate::path).collect(),
            skipped: records(&w.skipped)?,
            failed: records(&w.failed)?,
            excluded: serde_json::from_slice(&w.excluded)
                .map_err(|e| ClusterError::wire("a listing's excluded entries", e))?,
        })
    }
}

/// A report record for an entry not read.
fn problem(path: &Path, kind: Option<SkipKind>, error: Option<&str>, error_kind: &str) -> FileJson {
    FileJson {
        path: JsonPath::shown(path),
        size: None,
        mtime: None,
        digests: Default::default(),
        skipped: kind.map(|k| k.name().to_string()),
        error: error.map(|m| ErrorJson {
            kind: error_kind.to_string(),
            message: m.to_string(),
            worker: None,
        }),
        flv: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The directories left are shared evenly among the workers, 32 a task at most, one at
    /// least.
    #[test]
    fn the_directories_left_are_shared_among_the_workers_32_a_task_at_most() {
        // (left, workers) -> per task, worked out by hand.
        for (left, workers, want) in [
            (0, 4, 1),
            (1, 4, 1),
            (10, 4, 3),
            (12, 4, 3),
            (100, 4, 25),
            (1000, 4, 32),
            (1000, 0, 32),
            (5, 0, 5),
        ] {
            assert_eq!(listing_batch(left, workers), want, "{left} {workers}");
        }
    }

    /// A task lists depth first within its budget and hands back, in order, the directories
    /// it did not reach; what it found crosses the wire whole, odd names included.
    #[test]
    fn a_task_lists_within_its_budget_and_hands_back_the_rest() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        for d in ["a", "a/x", "b", "c"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        std::fs::write(root.join("a/x/f"), b"1").unwrap();
        let odd = root.join(std::ffi::OsStr::from_bytes(b"b/\xff"));
        std::fs::write(&odd, b"22").unwrap();
        std::os::unix::fs::symlink("f", root.join("c/l")).unwrap();
        let work = crate::map::tests::work(&root);
        // Five directories (the root and four): three listed, two handed back.
        let l = list_task(&work, 0, None, ListBudget { dirs: 3, files: 10 }).unwrap();
        assert_eq!(l.dirs.len(), 2);
        let rest = list_task(&work, 0, Some(l.dirs.clone()), ListBudget::default()).unwrap();
        assert!(rest.dirs.is_empty());
        let mut files: Vec<_> = [l, rest]
            .into_iter()
            .flat_map(|l| Listing::decode(&l.encode()).unwrap().files)
            .collect();
        files.sort_by(|a, b| a.path.cmp(&b.path));
        assert_eq!(files.len(), 2);
        assert_eq!(
            (files[0].path.clone(), files[0].size),
            (root.join("a/x/f"), 1)
        );
        assert_eq!((files[1].path.clone(), files[1].size), (odd, 2));
        assert!(Listing::decode(b"junk").is_err());
    }

    /// The cluster's listings leave out what one machine's walk leaves out: the same files,
    /// and the same excluded entries (counts and list), whatever tasks the walk is cut into;
    /// an excluded directory is handed to no task.
    #[test]
    fn listings_exclude_what_one_machines_walk_excludes() {
        use std::ffi::OsStr;
        let t = tempfile::tempdir().unwrap();
        let root = t.path().to_path_buf();
        for f in [
            "a/x.tmp",
            "a/y",
            "cache/z",
            "cache/deep/z2",
            "box/.nobackup",
            "box/w",
            "d1/f.tmp",
            "d1/g",
            "d2/g",
            "d2/sub/cache/h",
            "e",
        ] {
            std::fs::create_dir_all(root.join(f).parent().unwrap()).unwrap();
            std::fs::write(root.join(f), f.as_bytes()).unwrap();
        }
        let mut rules = trawl_walk::ExclusionBuilder::new();
        for p in ["*.tmp", "cache/"] {
            rules.pattern(OsStr::new(p)).unwrap();
        }
        rules.if_present(OsStr::new(".nobackup")).unwrap();
        let mut work = crate::map::tests::work(&root);
        work.cfg.walk.excluding = rules.build().unwrap();
        work.reduce = None;

        let mut walk = crate::Walk::new(Vec::new());
        let mut todo: Vec<Option<Vec<PathBuf>>> = vec![None];
        let mut handed: Vec<PathBuf> = Vec::new();
        let budget = ListBudget { dirs: 2, files: 3 };
        while let Some(dirs) = todo.pop() {
            let l = list_task(&work, 0, dirs, budget).unwrap();
            let l = Listing::decode(&l.encode()).unwrap();
            if !l.dirs.is_empty() {
                handed.extend(l.dirs.iter().cloned());
                todo.push(Some(l.dirs.clone()));
            }
            walk.add(0, l, None);
        }
        assert!(walk.listings() > 2, "cut into several tasks");
        for d in &handed {
            assert!(
                !d.ends_with("cache") && !d.ends_with("box"),
                "{} handed on",
                d.display()
            );
        }
        let files: Vec<PathBuf> = walk
            .shards(crate::ShardBounds {
                max_bytes: u64::MAX,
                max_files: 1000,
                workers: 1,
            })
            .into_iter()
            .flat_map(|s| s.files)
            .collect();

        let opts = trawl_engine::ScanOptions::new(work.cfg.clone(), Vec::new()).keep_records(true);
        let scan = trawl_engine::Scan::new(opts);
        let mut one = match scan
            .run(
                &trawl_stop::Stop::new(),
                &trawl_scan::NoProgress,
                &mut |_| {},
            )
            .unwrap()
        {
            trawl_engine::ScanOutcome::Finished(r) => r,
            trawl_engine::ScanOutcome::Stopped(r) => panic!("stopped: {r:?}"),
        };
        let mut local: Vec<PathBuf> = Vec::new();
        let walked = one
            .records
            .for_each_entry(|e| {
                use std::os::unix::ffi::OsStrExt;
                local.push(root.join(std::ffi::OsStr::from_bytes(&e.path)));
                Ok::<_, std::io::Error>(std::ops::ControlFlow::Continue(()))
            })
            .unwrap();
        assert!(walked.is_continue());
        let mut files = files;
        files.sort();
        local.sort();
        assert_eq!(files, local);
        assert_eq!(files.len(), 4, "{files:?}");
        let want = one.report.excluded.expect("excluded");
        let got = &walk.problems().excluded;
        assert_eq!(
            (got.directories, got.files, got.bytes, &got.listed),
            (want.directories, want.files, want.bytes, &want.listed)
        );
        assert_eq!((want.directories, want.files), (3, 2));
    }
}
