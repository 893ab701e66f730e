//! A local tree checked against a prefix (an upload's check): each file against what the store
//! holds of its object, by the store's own checksums and ETag where they prove something (no
//! download), by reading the object only where the store holds nothing comparable; and the
//! objects that have no local file.
//!
//! Three stages, each bounded: the local walk feeds batches of names, whose objects are looked
//! up together (HeadObject, several in flight); each file is read once through the reading
//! service with exactly the lanes its object's values call for (whole-file digests, each
//! part's digests for a multipart ETag or a composite checksum); what could not be decided
//! that way is read from the store afterwards. A value compared at a guessed part size that
//! disagrees proves nothing and is never a FAILED: the object is downloaded instead.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use trawl_digest::Algorithm;
use trawl_scan::{
    DigestLanes, FileInfo, Lane, LaneFactory, Links, LocalRoots, Outcome, Progress, Reading,
    ScanConfig, read_named,
};
use trawl_spool::Spool;
use trawl_stop::Stop;
use trawl_walk::WalkItem;

use crate::parts::{PartDigests, PartLane, of_parts, part_sizes};
use crate::{Check, ObjectSource, ObjectUrl, S3Error, Store, StoreFault, Stored, StoredKind};

/// Names looked up in the store together.
const BATCH: usize = 64;

/// What to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The local tree.
    pub local: PathBuf,
    /// The prefix it was uploaded to.
    pub url: ObjectUrl,
    /// The part size multipart uploads were made with (`--part-size`), tried first.
    pub part_size: Option<u64>,
    /// Read an object where the store holds nothing comparable (else it is NOT CHECKED).
    pub download: bool,
    /// The engine's settings for the local reads and the downloads.
    pub cfg: ScanConfig,
    /// Where the names wait, sorted, for the objects-without-a-file pass.
    pub temp_dir: PathBuf,
}

/// What became of one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The file's bytes are the object's.
    Ok {
        /// How that was shown.
        how: String,
        /// By reading the object (else by what the store holds of it).
        read: bool,
    },
    /// They are not: what differs.
    Failed(String),
    /// A local file with no object.
    Missing,
    /// An object with no local file.
    NotInLocal,
    /// Not compared: why.
    NotChecked(String),
    /// The file or the object could not be read: the error.
    Unreadable(String),
}

/// A verdict on a name (relative to the tree and the prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckLine {
    /// The name.
    pub name: Vec<u8>,
    /// Its verdict.
    pub verdict: Verdict,
}

/// How many names got each verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckCounts {
    /// OK by the store's values, without a download.
    pub ok_stored: u64,
    /// OK by reading the object.
    pub ok_read: u64,
    /// FAILED.
    pub failed: u64,
    /// MISSING from the store.
    pub missing: u64,
    /// NOT IN LOCAL.
    pub not_in_local: u64,
    /// NOT CHECKED.
    pub not_checked: u64,
    /// Unreadable.
    pub unreadable: u64,
}

/// Why a check could not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The store failed as a whole (its listing).
    #[error(transparent)]
    Store(#[from] S3Error),
    /// The names could not wait on disk (`--temp-dir`).
    #[error("{}: cannot keep the names (--temp-dir): {source}", dir.display())]
    Spool {
        /// Where they wait.
        dir: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// What one object's values call for, and what the file's read is compared with.
struct Plan {
    stored: Stored,
    /// Whole-file digests the stored values are compared with.
    whole: Vec<Algorithm>,
    /// The values made of parts to compare, each at a part size.
    parts: Vec<PartPlan>,
}

/// A value made of parts: which, by what algorithm, at what part size, and whether that size
/// is certain (the user's, giving the part count) or a guess.
struct PartPlan {
    of: PartOf,
    alg: Algorithm,
    size: u64,
    certain: bool,
}

/// Which stored value is made of parts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum PartOf {
    /// The multipart ETag (MD5 of the parts' MD5s).
    Etag,
    /// A composite checksum.
    Checksum,
}

impl Plan {
    fn new(stored: Stored, given: Option<u64>) -> Plan {
        let whole = stored.comparable();
        let mut parts = Vec::new();
        if let Some(n) = stored.parts {
            let sizes = part_sizes(stored.size, n, given);
            let certain = |p: u64| given == Some(p);
            let etag_multipart = stored.etag.as_deref().is_some_and(|e| e.contains('-'));
            for &size in &sizes {
                let certain = certain(size);
                if etag_multipart && !stored.etag_not_md5_by_encryption() {
                    let (of, alg) = (PartOf::Etag, Algorithm::Md5);
                    parts.push(PartPlan {
                        of,
                        alg,
                        size,
                        certain,
                    });
                }
                if stored.kind == StoredKind::Composite {
                    for &(alg, _) in &stored.checksums {
                        let of = PartOf::Checksum;
                        parts.push(PartPlan {
                            of,
                            alg,
                            size,
                            certain,
                        });
                    }
                }
            }
        }
        Plan {
            stored,
            whole,
            parts,
        }
    }

    /// The verdict on the file's read (its lane outputs), or None where nothing it holds
    /// proves either way (the object must be read).
    fn verdict(&self, digests: &[(Algorithm, Vec<u8>)], parts: &[PartDigests]) -> Option<Verdict> {
        let mut how = Vec::new();
        match self.stored.compare(digests) {
            Check::Disagrees {
                proof,
                stored,
                read,
            } => {
                return Some(Verdict::Failed(format!(
                    "{proof} is {stored}, the file's {read}"
                )));
            }
            Check::Agrees(p) => how.extend(p.iter().map(|p| p.to_string())),
            Check::Nothing => {}
        }
        let n = self.stored.parts.unwrap_or(0) as usize;
        for pp in &self.parts {
            let Some(p) = parts.iter().find(|p| p.alg == pp.alg && p.part == pp.size) else {
                continue;
            };
            let value = of_parts(p);
            let (stored, what) = match pp.of {
                PartOf::Etag => (
                    self.stored
                        .etag
                        .as_deref()
                        .and_then(|e| e.split_once('-'))
                        .and_then(|(h, _)| hex::decode(h).ok()),
                    format!(
                        "the store's multipart ETag ({n} parts of {} bytes)",
                        pp.size
                    ),
                ),
                PartOf::Checksum => (
                    self.stored
                        .checksums
                        .iter()
                        .find(|(a, _)| *a == pp.alg)
                        .map(|(_, v)| v.clone()),
                    format!(
                        "the store's composite {} checksum ({n} parts of {} bytes)",
                        pp.alg.name(),
                        pp.size
                    ),
                ),
            };
            match stored {
                Some(s) if p.digests.len() == n && s == value => how.push(what),
                Some(s) if pp.certain => {
                    return Some(Verdict::Failed(format!(
                        "{what} is {}, the file's {}",
                        hex::encode(s),
                        hex::encode(value)
                    )));
                }
                _ => {}
            }
        }
        (!how.is_empty()).then(|| Verdict::Ok {
            how: how.join(", "),
            read: false,
        })
    }
}

impl Stored {
    /// Whether the ETag is no digest because of how the object is encrypted (its `-N` aside).
    fn etag_not_md5_by_encryption(&self) -> bool {
        self.etag_not_md5 && !self.etag.as_deref().is_some_and(|e| e.contains('-'))
    }
}

/// The lanes each file's plan calls for (looked up by its path, which the feeder set).
struct CheckLanes {
    plans: Mutex<HashMap<PathBuf, Arc<Plan>>>,
    /// Whole-file SHA-256 for files whose objects may have to be read.
    fallback: bool,
}

impl LaneFactory for CheckLanes {
    fn lanes(&self, file: &FileInfo<'_>) -> Vec<Box<dyn Lane>> {
        let plan = self
            .plans
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(file.path);
        let mut out: Vec<Box<dyn Lane>> = Vec::new();
        let Some(plan) = plan else {
            return out;
        };
        let mut whole = plan.whole.clone();
        if self.fallback && !whole.contains(&Algorithm::Sha256) {
            whole.push(Algorithm::Sha256);
        }
        for a in whole {
            out.push(Box::new(a.hasher()));
        }
        let mut made: Vec<(Algorithm, u64)> = Vec::new();
        for pp in &plan.parts {
            if !made.contains(&(pp.alg, pp.size)) {
                made.push((pp.alg, pp.size));
                out.push(Box::new(PartLane::new(pp.alg, pp.size)));
            }
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The verdicts as they are told, counted.
struct Tally<'a> {
    counts: CheckCounts,
    line: &'a mut dyn FnMut(CheckLine),
}

impl Tally<'_> {
    fn tell(&mut self, name: Vec<u8>, verdict: Verdict) {
        let c = &mut self.counts;
        match &verdict {
            Verdict::Ok { read: false, .. } => c.ok_stored += 1,
            Verdict::Ok { read: true, .. } => c.ok_read += 1,
            Verdict::Failed(_) => c.failed += 1,
            Verdict::Missing => c.missing += 1,
            Verdict::NotInLocal => c.not_in_local += 1,
            Verdict::NotChecked(_) => c.not_checked += 1,
            Verdict::Unreadable(_) => c.unreadable += 1,
        }
        (self.line)(CheckLine { name, verdict });
    }
}

/// A local file's name, and its SHA-256, whose object must be read to be compared.
type ToRead = (Vec<u8>, Vec<u8>);

/// Checks `opts.local` against `opts.url` in `store`, telling `line` each name's verdict (on
/// this thread, in no particular order); the counts at the end.
pub fn check(
    opts: &CheckOptions,
    store: &Arc<Store>,
    progress: &dyn Progress,
    stop: &Stop,
    line: &mut dyn FnMut(CheckLine),
) -> Result<CheckCounts, CheckError> {
    let mut tally = Tally {
        counts: CheckCounts::default(),
        line,
    };
    let mut cfg = opts.cfg.clone();
    cfg.roots = vec![opts.local.clone()];
    let (local_names, to_read) = read_local(opts, store, &cfg, progress, stop, &mut tally)?;
    if !to_read.is_empty() && !stop.is_stopping() {
        read_objects(opts, store, &cfg, to_read, progress, stop, &mut tally);
    }
    if !stop.is_stopping() {
        not_in_local(opts, store, stop, local_names, &mut |n| {
            tally.tell(n, Verdict::NotInLocal)
        })?;
    }
    Ok(tally.counts)
}

/// The local files read, each with the lanes its object's stored values call for, and judged;
/// the names seen (to find the objects with none), and the files whose objects must be read.
fn read_local(
    opts: &CheckOptions,
    store: &Store,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    tally: &mut Tally<'_>,
) -> Result<(Spool, Vec<ToRead>), CheckError> {
    let local_names = Mutex::new(Spool::new(&opts.temp_dir, 4 << 20));
    let decided: Mutex<Vec<(Vec<u8>, Verdict)>> = Mutex::new(Vec::new());
    let lanes = CheckLanes {
        plans: Mutex::new(HashMap::new()),
        fallback: opts.download,
    };
    let source = LocalRoots::new(vec![opts.local.clone()], Links::Beneath);
    let reading = Reading {
        source: &source,
        cfg,
        lanes: &lanes,
        cap: None,
        announce: true,
    };
    let mut to_read = Vec::new();
    let fed = read_named(
        &reading,
        progress,
        stop,
        |f| feed(opts, store, stop, &lanes, &local_names, &decided, f),
        |(name, plan): (Vec<u8>, Arc<Plan>), o| match of_local(&plan, o, opts.download) {
            Judged::Verdict(v) => tally.tell(name, v),
            Judged::Read(sha) => to_read.push((name, sha)),
            Judged::Unread => {}
        },
    );
    fed.map_err(|source| CheckError::Spool {
        dir: opts.temp_dir.clone(),
        source,
    })?;
    for (name, v) in std::mem::take(&mut *lock(&decided)) {
        tally.tell(name, v);
    }
    Ok((
        local_names.into_inner().unwrap_or_else(|p| p.into_inner()),
        to_read,
    ))
}

/// What a local file's read decides.
enum Judged {
    Verdict(Verdict),
    /// Nothing the store holds compares: its object is to be read; the file's SHA-256.
    Read(Vec<u8>),
    /// Not read: the run stopped.
    Unread,
}

fn of_local(plan: &Plan, o: Outcome, download: bool) -> Judged {
    Judged::Verdict(match o {
        Outcome::Read(rec) => {
            let digests = rec.digests();
            let parts: Vec<PartDigests> = rec
                .outputs
                .iter()
                .filter_map(|o| o.other::<PartDigests>().cloned())
                .collect();
            match plan.verdict(&digests, &parts) {
                Some(v) => v,
                None if download => {
                    let sha = digests.into_iter().find(|(a, _)| *a == Algorithm::Sha256);
                    return Judged::Read(sha.map(|(_, d)| d).unwrap_or_default());
                }
                None => Verdict::NotChecked(
                    "the store holds no checksum or ETag comparable with the file's bytes \
                     (--no-download)"
                        .to_string(),
                ),
            }
        }
        Outcome::Gone(_) => Verdict::Unreadable("the local file vanished".to_string()),
        Outcome::Refused { why, .. } => Verdict::NotChecked(why.to_string()),
        Outcome::Failed(e) => Verdict::Unreadable(e.to_string()),
        Outcome::Unread(_) => return Judged::Unread,
    })
}

/// The objects nothing the store holds decided: read, and compared by SHA-256.
fn read_objects(
    opts: &CheckOptions,
    store: &Arc<Store>,
    cfg: &ScanConfig,
    todo: Vec<ToRead>,
    progress: &dyn Progress,
    stop: &Stop,
    tally: &mut Tally<'_>,
) {
    let objects = ObjectSource::new(store.clone(), vec![opts.url.clone()]);
    let lanes = DigestLanes(vec![Algorithm::Sha256]);
    let reading = Reading {
        source: &objects,
        cfg,
        lanes: &lanes,
        cap: None,
        announce: true,
    };
    read_named(
        &reading,
        progress,
        stop,
        |f| {
            for (name, sha) in todo {
                if f.send(0, &name.clone(), (name, sha)).is_break() {
                    break;
                }
            }
        },
        |(name, sha), o| {
            let v = match o {
                Outcome::Read(rec) => match rec.digests().first() {
                    Some((_, d)) if *d == sha => Verdict::Ok {
                        how: "read from the store: SHA-256 equal".to_string(),
                        read: true,
                    },
                    Some((_, d)) => Verdict::Failed(format!(
                        "read from the store: SHA-256 {}, the file's {}",
                        hex::encode(d),
                        hex::encode(&sha)
                    )),
                    None => Verdict::Unreadable("no digest".to_string()),
                },
                Outcome::Gone(_) => Verdict::Missing,
                Outcome::Refused { why, .. } => Verdict::NotChecked(why.to_string()),
                Outcome::Failed(e) => Verdict::Unreadable(e.to_string()),
                Outcome::Unread(_) => return,
            };
            tally.tell(name, v);
        },
    );
}

/// The walk's files in batches: each batch's objects looked up together, then each file sent
/// to be read with its plan, or decided here (no object, a lookup that failed, a name no key
/// can have).
fn feed(
    opts: &CheckOptions,
    store: &Store,
    stop: &Stop,
    lanes: &CheckLanes,
    names: &Mutex<Spool>,
    decided: &Mutex<Vec<(Vec<u8>, Verdict)>>,
    f: &mut trawl_scan::Feeder<'_, (Vec<u8>, Arc<Plan>)>,
) -> std::io::Result<()> {
    let (tx, rx) = crossbeam_channel::bounded::<WalkItem>(1024);
    let walk_stop = stop.child();
    std::thread::scope(|s| {
        s.spawn(|| {
            trawl_walk::walk(
                std::slice::from_ref(&opts.local),
                &opts.cfg.walk,
                &tx,
                &walk_stop,
                &|_| {},
            );
            drop(tx);
        });
        let mut batch: Vec<Named> = Vec::new();
        let mut flush = |batch: &mut Vec<Named>| {
            let keys: Vec<String> = batch.iter().map(|(_, _, k)| k.clone()).collect();
            let found = store.stored_many(&opts.url, &keys);
            let sizes = part_sizes_of(store, &opts.url, &keys, &found);
            for (((e, name, _), st), reported) in batch.drain(..).zip(found).zip(sizes) {
                match st {
                    Ok(st) => {
                        // The store's own part size where it reports one: a value made of
                        // parts compared at it proves either way, as at the user's.
                        let plan = Arc::new(Plan::new(st, reported.or(opts.part_size)));
                        lock(&lanes.plans).insert(e.path.clone(), plan.clone());
                        if f.send_entry(e, (name, plan)).is_break() {
                            return false;
                        }
                    }
                    Err(err) if err.fault() == StoreFault::NotFound => {
                        lock(decided).push((name, Verdict::Missing));
                    }
                    Err(err) => lock(decided).push((name, Verdict::Unreadable(err.to_string()))),
                }
            }
            true
        };
        for item in rx.iter() {
            if stop.is_stopping() {
                walk_stop.request(trawl_stop::Reason::Failed);
                break;
            }
            let e = match item {
                WalkItem::File(e) => e,
                WalkItem::Error(err) => {
                    let p = err.path().map(Path::to_path_buf).unwrap_or_default();
                    let name = relative(&opts.local, &p);
                    lock(decided).push((name, Verdict::Unreadable(err.to_string())));
                    continue;
                }
                WalkItem::Skipped { path, kind } => {
                    let name = relative(&opts.local, &path);
                    lock(decided).push((name, Verdict::NotChecked(kind.describe().to_string())));
                    continue;
                }
                WalkItem::Excluded(_) => continue,
            };
            let name = relative(&opts.local, &e.path);
            lock(names).push(&name, &[])?;
            let Some(key) = opts.url.key_of(&name) else {
                let why = "a name no key can have (not UTF-8, or not plain)".to_string();
                lock(decided).push((name, Verdict::NotChecked(why)));
                continue;
            };
            batch.push((e, name, key));
            if batch.len() == BATCH && !flush(&mut batch) {
                walk_stop.request(trawl_stop::Reason::Failed);
                return Ok(());
            }
        }
        flush(&mut batch);
        Ok(())
    })
}

/// The part size the store reports for each multipart object among `found` (None for the
/// rest, and where it reports none): one GetObjectAttributes each, several at once.
fn part_sizes_of(
    store: &Store,
    url: &ObjectUrl,
    keys: &[String],
    found: &[Result<Stored, S3Error>],
) -> Vec<Option<u64>> {
    let multipart: Vec<(usize, (String, Stored))> = found
        .iter()
        .zip(keys)
        .enumerate()
        .filter_map(|(i, (st, k))| match st {
            Ok(st) if st.parts.is_some_and(|n| n > 1) => Some((i, (k.clone(), st.clone()))),
            _ => None,
        })
        .collect();
    let mut out = vec![None; keys.len()];
    if multipart.is_empty() {
        return out;
    }
    let (at, objects): (Vec<usize>, Vec<(String, Stored)>) = multipart.into_iter().unzip();
    for (i, size) in at.into_iter().zip(store.part_sizes_many(url, &objects)) {
        out[i] = size;
    }
    out
}

/// A local file, its name and its object's key.
type Named = (trawl_walk::FileEntry, Vec<u8>, String);

/// `path` below `root`, as bytes.
fn relative(root: &Path, path: &Path) -> Vec<u8> {
    path.strip_prefix(root)
        .unwrap_or(path)
        .as_os_str()
        .as_bytes()
        .to_vec()
}

/// Tells `each` every object under the prefix with no local file (names merged in order).
fn not_in_local(
    opts: &CheckOptions,
    store: &Store,
    stop: &Stop,
    local: Spool,
    each: &mut dyn FnMut(Vec<u8>),
) -> Result<(), CheckError> {
    let spool_err = |source| CheckError::Spool {
        dir: opts.temp_dir.clone(),
        source,
    };
    let mut objects = Spool::new(&opts.temp_dir, 4 << 20);
    let mut failed = None;
    store.list(&opts.url, stop, &mut |l| {
        match opts.url.name_of(&l.key).filter(|_| l.refused.is_none()) {
            Some(name) => {
                if let Err(e) = objects.push(name.as_bytes(), &[]) {
                    failed = Some(e);
                    return std::ops::ControlFlow::Break(());
                }
            }
            // A key no file can be named by (`a//b`, not UTF-8 once decoded) has no local
            // file: said as the store lists it, never matched with a name that may look like
            // it. A "directory" marker is no object.
            None if l.key.ends_with('/') && l.size == 0 && l.refused.is_none() => {}
            None => each(
                l.key
                    .strip_prefix(opts.url.prefix())
                    .unwrap_or(&l.key)
                    .as_bytes()
                    .to_vec(),
            ),
        }
        std::ops::ControlFlow::Continue(())
    })?;
    if let Some(e) = failed {
        return Err(spool_err(e));
    }
    let local = Arc::new(local.finish().map_err(spool_err)?);
    let objects = Arc::new(objects.finish().map_err(spool_err)?);
    let mut l = local.iter().map_err(spool_err)?;
    let mut next = l.next_record().map_err(spool_err)?.map(|(k, _)| k.to_vec());
    objects
        .for_each(|name, _| {
            while next.as_deref().is_some_and(|n| n < name) {
                next = l.next_record()?.map(|(k, _)| k.to_vec());
            }
            if next.as_deref() != Some(name) {
                each(name.to_vec());
            }
            Ok::<(), std::io::Error>(())
        })
        .map_err(spool_err)
}
