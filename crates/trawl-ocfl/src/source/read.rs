//! An audit's reads of OCFL content, through the reading service: the plan's logical paths
//! taken to their content files, each content file read once for the logical paths (of one
//! object, in a row) that name it, opened beneath its root without following any link.

use std::collections::HashMap;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::Receiver;
use trawl_catalog::{Expected, ReadPlan, ReadResult};
use trawl_digest::Algorithm;
use trawl_read::{DirAt, Refused, RootDir, open_no_links};
use trawl_scan::{
    DigestLanes, Event, Feeder, Input, LaneFactory, Outcome, Progress, Reading, Resolve,
    ScanConfig, read_named,
};
use trawl_stop::Stop;
use trawl_walk::{FileEntry, Opener};

use super::OcflSource;
use super::files::Digests;
use crate::tree::Name;

/// Where the expected digests come from, as events name it.
const FROM: &str = "the OCFL inventory";

/// A logical path sent to be read: its path, the digests it must have, and its version's
/// directory (what it is fixed in).
type Named = (PathBuf, Digests, PathBuf);

/// A logical path of the plan waiting for its content file: its entry, the digests it must
/// have, its version's directory.
type Planned = (FileEntry, Digests, PathBuf);

/// Logical paths of one object grouped before their content files are sent, at most this many.
const GROUP_FILES: usize = 4096;

/// Opens `content` (a path below the root `rd`) to be read, following no link on the way or
/// at its end: one there is refused as leading outside the root.
fn no_links(rd: Arc<RootDir>, content: Name) -> Opener {
    Opener(Arc::new(move || {
        let segs = content.split(|&b| b == b'/').map(<[u8]>::to_vec).collect();
        open_no_links(&rd, segs).map_err(|why| match why {
            // The file's opener can only answer an I/O error: the refusal travels in it, typed.
            Refused::Outside => trawl_read::LeadsOutside.into_io(),
            Refused::NotFound => io::Error::from(io::ErrorKind::NotFound),
        })
    }))
}

/// The content files of OCFL objects under the audit's roots, read by the scan engine.
struct ObjectContent {
    /// Each root, opened (None: it could not be).
    roots: Vec<Option<Arc<RootDir>>>,
}

/// [`ObjectContent`]'s names: a content path below its root is opened without following a
/// link; an entry the caller made (named by its logical path) is read as its opener says.
struct ContentResolver<'a> {
    roots: &'a [Option<Arc<RootDir>>],
}

impl Resolve for ContentResolver<'_> {
    fn entry(&mut self, root: usize, rel: &[u8]) -> Result<FileEntry, Outcome> {
        let Some(Some(rd)) = self.roots.get(root) else {
            return Err(Outcome::Gone(PathBuf::from(std::ffi::OsStr::from_bytes(
                rel,
            ))));
        };
        let path = rd.path().join(std::ffi::OsStr::from_bytes(rel));
        Ok(FileEntry {
            root,
            open: Some(no_links(rd.clone(), rel.to_vec())),
            ..FileEntry::named(&path)
        })
    }

    fn known(&mut self, e: FileEntry) -> Result<FileEntry, Outcome> {
        Ok(e)
    }
}

impl trawl_scan::Source for ObjectContent {
    fn resolver(&self) -> Box<dyn Resolve + '_> {
        Box::new(ContentResolver { roots: &self.roots })
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
        trawl_scan::scan(cfg, Input::Stream(entries), lanes, progress, stop, sink);
    }
}

/// The plan's logical paths of one object, by content file.
#[derive(Default)]
struct Group {
    /// The object (its root's index and directory below it).
    object: Option<(usize, Name)>,
    /// Content path below the root -> the logical paths' entries that name it.
    by_content: HashMap<Name, Vec<Planned>>,
    files: usize,
}

impl Group {
    fn add(&mut self, e: FileEntry, content: Name, want: Digests, unit: PathBuf) {
        self.files += 1;
        self.by_content
            .entry(content)
            .or_default()
            .push((e, want, unit));
    }

    /// Sends one read per content file, named by the first logical path it stands for and
    /// answered with all of them; `Break` once the reader has stopped.
    fn send(
        &mut self,
        feeder: &mut Feeder<'_, Vec<Named>>,
        dirs: &[Option<Arc<RootDir>>],
    ) -> std::ops::ControlFlow<()> {
        self.files = 0;
        let mut groups: Vec<(Name, Vec<Planned>)> =
            std::mem::take(&mut self.by_content).into_iter().collect();
        groups.sort_by(|a, b| a.1[0].0.path.cmp(&b.1[0].0.path));
        for (content, entries) in groups {
            let first = entries[0].0.clone();
            let Some(Some(rd)) = dirs.get(first.root).cloned() else {
                continue;
            };
            let names = entries
                .into_iter()
                .map(|(e, w, u)| (e.path, w, u))
                .collect();
            let e = FileEntry {
                open: Some(no_links(rd, content)),
                dir: None,
                ..first
            };
            feeder.send_entry(e, names)?;
        }
        std::ops::ControlFlow::Continue(())
    }
}

/// The catalog's algorithms, then the inventories' that it lacks: a file is held to its
/// inventory whatever the catalog computes.
fn lanes(catalog: &[Algorithm], inventories: &[Algorithm]) -> DigestLanes {
    let mut algorithms = catalog.to_vec();
    for a in inventories {
        if !algorithms.contains(a) {
            algorithms.push(*a);
        }
    }
    DigestLanes(algorithms)
}

/// Reads the plan's logical paths from their content files, telling `found` what each read
/// found (a logical path that is no file of an object the walk found is gone).
pub(super) fn read(
    src: &mut OcflSource,
    plan: ReadPlan<'_>,
    progress: &dyn Progress,
    stop: &Stop,
    found: &mut dyn FnMut(ReadResult<'_>),
) {
    let lanes = lanes(plan.algorithms, &src.inventory_algorithms);
    let roots = plan.roots;
    let source = ObjectContent {
        roots: roots
            .iter()
            .map(|r| RootDir::open(r).ok().map(Arc::new))
            .collect(),
    };
    let reading = Reading {
        source: &source,
        cfg: plan.cfg,
        lanes: &lanes,
        cap: None,
        // The plan announced its totals.
        announce: false,
    };
    let feed = plan.feed;
    let dirs = &source.roots;
    let gone = read_named(
        &reading,
        progress,
        stop,
        move |feeder| src.feed(feed, roots, dirs, feeder),
        |named: Vec<Named>, outcome| tell(&named, &outcome, found),
    );
    for path in gone {
        found(ReadResult::Gone { path: &path });
    }
}

impl OcflSource {
    /// Sends the plan's files, those of one object in a row grouped by content file (a
    /// content file several versions name is read once for all of them); returns the logical
    /// paths that are no file of an object the walk found.
    fn feed(
        &mut self,
        feed: Receiver<FileEntry>,
        roots: &[PathBuf],
        dirs: &[Option<Arc<RootDir>>],
        feeder: &mut Feeder<'_, Vec<Named>>,
    ) -> Vec<PathBuf> {
        // Each root's directory, for the inventories (opened as the walk opened them).
        let tops: Vec<Option<DirAt>> = roots.iter().map(|r| DirAt::open(r).ok()).collect();
        let mut gone = Vec::new();
        let mut group = Group::default();
        for e in feed {
            let root = &roots[e.root];
            let top = tops.get(e.root).and_then(Option::as_ref);
            let hit = e
                .path
                .strip_prefix(root)
                .ok()
                .zip(top)
                .and_then(|(rel, top)| self.resolve((e.root, top), rel.as_os_str().as_bytes()));
            let (Some((obj, content, want, unit)), Some(Some(_))) = (hit, dirs.get(e.root)) else {
                gone.push(e.path);
                continue;
            };
            let object = (e.root, obj);
            if group.object.as_ref() != Some(&object) || group.files >= GROUP_FILES {
                if group.send(feeder, dirs).is_break() {
                    return gone;
                }
                group.object = Some(object);
            }
            let unit = root.join(std::ffi::OsStr::from_bytes(&unit));
            group.add(e, content, want, unit);
        }
        let _ = group.send(feeder, dirs);
        gone
    }
}

/// Tells `found` what reading a content file found, for each logical path it stands for.
fn tell(named: &[Named], outcome: &Outcome, found: &mut dyn FnMut(ReadResult<'_>)) {
    let digests = match outcome {
        Outcome::Read(rec) => rec.digests(),
        _ => Vec::new(),
    };
    for (logical, want, unit) in named {
        match outcome {
            Outcome::Read(rec) => found(ReadResult::Read {
                root: rec.root,
                path: logical,
                size: rec.size,
                mtime_ns: rec
                    .mtime_sec
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(rec.mtime_nsec),
                dev: rec.dev,
                ino: rec.ino,
                // A logical path is no file a scan finds: nothing to reuse by.
                ctime_ns: None,
                digests: &digests,
                expected: Some(Expected {
                    digests: want,
                    from: FROM,
                    fixed: Some(unit),
                }),
            }),
            Outcome::Gone(_) => found(ReadResult::Gone { path: logical }),
            Outcome::Failed(e) => found(ReadResult::Failed {
                path: Some(logical),
                error: e,
            }),
            Outcome::Refused { path, why } => found(ReadResult::Failed {
                path: Some(logical),
                error: &trawl_scan::Refused {
                    path: path.clone(),
                    why: *why,
                },
            }),
            // Stopped before it was read: nothing is recorded for it, as for any file a
            // stopped audit did not reach.
            Outcome::Unread(_) => {}
        }
    }
}
