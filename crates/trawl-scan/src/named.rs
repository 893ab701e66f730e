//! The reading service: files named under roots (a bag's payload, an OCFL object's content,
//! an audit's plan), each read once through the engine and answered with a typed [`Outcome`].
//!
//! What is asked of it: names, each with something of the caller's (`T`), fed from a thread of
//! their own as the caller produces them; what it answers: that thing with the name's outcome,
//! on the caller's thread. In between, one rule for all of them: a [`Source`] turns each name
//! into what the engine reads (or decides it without reading: gone, refused), at most
//! [`IN_FLIGHT`] wait in a bounded channel, only the files under way are held in a map, each
//! event is matched back to its name, and a name the engine never answered (a stop) is answered
//! [`Outcome::Unread`]. Every name sent is answered exactly once.
//!
//! Where the bytes come from is the [`Source`]'s: [`LocalRoots`] opens files under local
//! directories (their directory opened beneath the root, or the whole name in one step beneath
//! it, or by path), and hands the entries to the scan engine. A source of another kind (objects
//! in a store, read by ranged requests) implements [`Source`] and [`Resolve`] and its callers
//! do not change.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use crossbeam_channel::Receiver;
use trawl_read::ReadError;
use trawl_stop::{Reason, Stop};
use trawl_walk::{FileEntry, SkipKind};

use crate::relative::{NotBeneath, RelativeEntries};
use crate::{Event, FileRecord, Input, LaneFactory, Progress, ScanConfig, ScanError};

/// How many names may wait for the engine ahead of its results.
pub const IN_FLIGHT: usize = 1024;

/// What became of one named file.
#[derive(Debug)]
pub enum Outcome {
    /// Read to its end: its size, identity and what each lane made of it (its digests).
    Read(FileRecord),
    /// Not there (or a directory on its way is not), when named or when opened.
    Gone(PathBuf),
    /// Not read, by rule.
    Refused {
        /// The file.
        path: PathBuf,
        /// Why.
        why: Refusal,
    },
    /// Opening or reading it failed; the error names the file.
    Failed(ScanError),
    /// Never read: the run stopped first.
    Unread(PathBuf),
}

impl Outcome {
    /// The file this outcome is about.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Outcome::Read(r) => Some(&r.path),
            Outcome::Gone(p) | Outcome::Unread(p) | Outcome::Refused { path: p, .. } => Some(p),
            Outcome::Failed(e) => e.path(),
        }
    }
}

/// Why a named file was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Its name (through `..` or a symbolic link) leads outside its root.
    #[error("{}", trawl_read::LeadsOutside)]
    Outside,
    /// A FIFO, socket, device or other thing that is not a regular file.
    #[error("{}", .0.describe())]
    NotRegular(SkipKind),
    /// Not one plain name below the root (absolute, or with an empty, `.` or `..` segment),
    /// where names are not paths to resolve (a store's keys): nothing is asked for by it.
    #[error(
        "not one plain name below the root (absolute, or an empty, '.' or '..' segment): not read"
    )]
    NotPlain,
    /// Larger than the cap the caller set (by its size when named).
    #[error("larger than {cap} bytes: not read")]
    OverCap {
        /// The cap, in bytes.
        cap: u64,
    },
}

/// A file refused, as an error that names it (`PATH: why`).
#[derive(Debug, thiserror::Error)]
#[error("{}: {why}", path.display())]
pub struct Refused {
    /// The file.
    pub path: PathBuf,
    /// Why it was not read.
    pub why: Refusal,
}

/// Where named files are read from.
pub trait Source {
    /// A resolver of names, moved to the thread that feeds the engine.
    fn resolver(&self) -> Box<dyn Resolve + '_>;

    /// Reads `entries` until the channel closes, every entry with `lanes`, telling `sink`
    /// each event (on this thread); stops starting files when `stop` is set.
    fn read(
        &self,
        cfg: &ScanConfig,
        lanes: &dyn LaneFactory,
        progress: &dyn Progress,
        stop: &Stop,
        entries: Receiver<FileEntry>,
        sink: &mut dyn FnMut(Event),
    );
}

/// Turns names into the entries a [`Source`] reads, or decides them without reading.
pub trait Resolve: Send {
    /// The entry for `rel` below root `root`, or its outcome ([`Outcome::Gone`],
    /// [`Outcome::Refused`]) where it is decided now.
    fn entry(&mut self, root: usize, rel: &[u8]) -> Result<FileEntry, Outcome>;

    /// An entry whose size and identity the caller has already (an audit's plan), made ready
    /// to be read under the same rules.
    fn known(&mut self, e: FileEntry) -> Result<FileEntry, Outcome>;
}

/// How a [`LocalRoots`] treats symbolic links on a name's way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Each file opened by its name in its directory without following a link, that
    /// directory opened beneath the root (links on the way followed only where they stay
    /// beneath).
    Beneath,
    /// The whole name opened in one step beneath the root: links, the name itself included,
    /// followed only where they stay beneath.
    FollowInside,
    /// Opened by its path, links followed wherever they lead (`--follow`).
    Follow,
}

/// Files under local directories, read by the scan engine.
#[derive(Debug, Clone)]
pub struct LocalRoots {
    roots: Vec<PathBuf>,
    links: Links,
}

impl LocalRoots {
    /// Names below `roots` (by index), opened as `links` says.
    pub fn new(roots: Vec<PathBuf>, links: Links) -> LocalRoots {
        LocalRoots { roots, links }
    }
}

impl Source for LocalRoots {
    fn resolver(&self) -> Box<dyn Resolve + '_> {
        Box::new(LocalResolver {
            roots: &self.roots,
            links: self.links,
            beneath: std::iter::repeat_with(|| None)
                .take(self.roots.len())
                .collect(),
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
        crate::scan(cfg, Input::Stream(entries), lanes, progress, stop, sink);
    }
}

/// [`LocalRoots`]' names: each root opened once, when first named.
struct LocalResolver<'a> {
    roots: &'a [PathBuf],
    links: Links,
    /// Per root: not opened yet, or opened (None: it could not be).
    beneath: Vec<Option<Option<RelativeEntries>>>,
}

impl LocalResolver<'_> {
    fn beneath(&mut self, root: usize) -> Option<&mut RelativeEntries> {
        let r = self.roots.get(root)?;
        self.beneath
            .get_mut(root)?
            .get_or_insert_with(|| RelativeEntries::open(r).ok())
            .as_mut()
    }
}

/// A name refused or missing beneath its root, as its outcome.
fn not_beneath(path: PathBuf, why: NotBeneath) -> Outcome {
    match why {
        NotBeneath::Missing => Outcome::Gone(path),
        NotBeneath::Outside => Outcome::Refused {
            path,
            why: Refusal::Outside,
        },
    }
}

impl Resolve for LocalResolver<'_> {
    fn entry(&mut self, root: usize, rel: &[u8]) -> Result<FileEntry, Outcome> {
        let Some(dir) = self.roots.get(root) else {
            return Err(Outcome::Gone(PathBuf::from(std::ffi::OsStr::from_bytes(
                rel,
            ))));
        };
        let path = dir.join(std::ffi::OsStr::from_bytes(rel));
        let links = self.links;
        if links == Links::Follow {
            return Ok(FileEntry {
                root,
                ..FileEntry::named(&path)
            });
        }
        // A root that cannot be opened holds nothing that can be read beneath it.
        let Some(b) = self.beneath(root) else {
            return Err(Outcome::Gone(path));
        };
        let e = match links {
            Links::FollowInside => b.entry_following_inside(rel, &path, root),
            _ => b.entry(rel, &path, root),
        };
        e.map_err(|why| not_beneath(path, why))
    }

    fn known(&mut self, e: FileEntry) -> Result<FileEntry, Outcome> {
        let root = self.roots.get(e.root);
        let rel = root.and_then(|r| e.path.strip_prefix(r).ok());
        let (Links::Beneath | Links::FollowInside, Some(rel)) = (self.links, rel) else {
            return Ok(e);
        };
        let rel = rel.as_os_str().as_bytes().to_vec();
        let Some(b) = self.beneath(e.root) else {
            return Err(Outcome::Gone(e.path));
        };
        // Only its directory: the caller has its size and identity already.
        match b.dir_of(&rel, &e.path) {
            Ok(dir) => Ok(FileEntry {
                dir: Some(dir),
                ..e
            }),
            Err(why) => Err(not_beneath(e.path, why)),
        }
    }
}

/// What a reading is to do, whatever it reads.
pub struct Reading<'a> {
    /// Where the files are.
    pub source: &'a dyn Source,
    /// The engine's settings.
    pub cfg: &'a ScanConfig,
    /// What each file is read for (its digests: [`crate::DigestLanes`]).
    pub lanes: &'a dyn LaneFactory,
    /// Files larger than this (by their size when named) are refused, not read.
    pub cap: Option<u64>,
    /// Whether each file sent is told to the progress as found (false where the caller
    /// announced the totals itself).
    pub announce: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sends names to [`read_named`]'s engine, each with what its outcome is handed back with.
pub struct Feeder<'a, T> {
    resolve: Box<dyn Resolve + 'a>,
    cap: Option<u64>,
    announce: bool,
    in_flight: &'a Mutex<HashMap<PathBuf, T>>,
    decided: &'a Mutex<Vec<(T, Outcome)>>,
    tx: crossbeam_channel::Sender<FileEntry>,
    progress: &'a dyn Progress,
    stop: &'a Stop,
}

impl<T> Feeder<'_, T> {
    /// Queues `rel` below root `root` (by index); `Break` once the engine has stopped.
    pub fn send(&mut self, root: usize, rel: &[u8], with: T) -> ControlFlow<()> {
        if self.stop.is_stopping() {
            return ControlFlow::Break(());
        }
        let e = self.resolve.entry(root, rel);
        self.queue(e, with)
    }

    /// Queues an entry whose size and identity the caller has already; `Break` once the
    /// engine has stopped.
    pub fn send_entry(&mut self, e: FileEntry, with: T) -> ControlFlow<()> {
        if self.stop.is_stopping() {
            return ControlFlow::Break(());
        }
        let e = self.resolve.known(e);
        self.queue(e, with)
    }

    fn queue(&mut self, e: Result<FileEntry, Outcome>, with: T) -> ControlFlow<()> {
        let f = match e {
            Ok(f) => match self.cap {
                Some(cap) if f.size > cap => {
                    let why = Refusal::OverCap { cap };
                    let path = f.path;
                    lock(self.decided).push((with, Outcome::Refused { path, why }));
                    return ControlFlow::Continue(());
                }
                _ => f,
            },
            Err(o) => {
                lock(self.decided).push((with, o));
                return ControlFlow::Continue(());
            }
        };
        if self.announce {
            self.progress.found(1, f.size);
        }
        lock(self.in_flight).insert(f.path.clone(), with);
        match self.tx.send(f) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    }
}

/// An engine event as the outcome of the file it names (None: it names none, or is no
/// outcome: an exclusion, which a stream of names never has).
fn outcome(ev: Event) -> Option<(PathBuf, Outcome)> {
    Some(match ev {
        Event::File(rec) => (rec.path.clone(), Outcome::Read(rec)),
        Event::Failed(ScanError::Read(ReadError::Vanished { path })) => {
            (path.clone(), Outcome::Gone(path))
        }
        // Its opener found the name leads outside the root (a link swapped in since it was
        // named): refused by the rule, not failed.
        Event::Failed(ScanError::Read(ReadError::Outside { path })) => (
            path.clone(),
            Outcome::Refused {
                path,
                why: Refusal::Outside,
            },
        ),
        Event::Failed(e) => (e.path()?.to_path_buf(), Outcome::Failed(e)),
        Event::Skipped { path, kind } => (
            path.clone(),
            Outcome::Refused {
                path,
                why: Refusal::NotRegular(kind),
            },
        ),
        Event::Excluded(_) => return None,
    })
}

/// Reads the files `feed` names (from a thread of its own, as it produces them) through
/// `reading`'s source, each once, and hands each name's outcome to `done` with what it was
/// sent with: every name sent is answered once. At most [`IN_FLIGHT`] names wait in the
/// channel; only files under way are held.
pub fn read_named<T: Send, R: Send>(
    reading: &Reading<'_>,
    progress: &dyn Progress,
    stop: &Stop,
    feed: impl FnOnce(&mut Feeder<'_, T>) -> R + Send,
    mut done: impl FnMut(T, Outcome),
) -> R {
    let in_flight: Mutex<HashMap<PathBuf, T>> = Mutex::new(HashMap::new());
    let decided: Mutex<Vec<(T, Outcome)>> = Mutex::new(Vec::new());
    // The engine's own token: stopping it when it is done releases a feeder blocked on a
    // full channel without stopping the caller's run.
    let engine = stop.child();
    let resolve = reading.source.resolver();
    let r = std::thread::scope(|s| {
        let (tx, rx) = crossbeam_channel::bounded(IN_FLIGHT);
        let (in_flight, decided, engine) = (&in_flight, &decided, &engine);
        let (cap, announce) = (reading.cap, reading.announce);
        let feeder = s.spawn(move || {
            feed(&mut Feeder {
                resolve,
                cap,
                announce,
                in_flight,
                decided,
                tx,
                progress,
                stop: engine,
            })
        });
        reading.source.read(
            reading.cfg,
            reading.lanes,
            progress,
            engine,
            rx,
            &mut |ev| {
                let Some((path, o)) = outcome(ev) else {
                    return;
                };
                let with = lock(in_flight).remove(&path);
                if let Some(with) = with {
                    done(with, o);
                }
            },
        );
        engine.request(Reason::Failed);
        feeder
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    for (with, o) in decided.into_inner().unwrap_or_else(|p| p.into_inner()) {
        done(with, o);
    }
    // Whatever the engine did not answer (none, unless stopped) was not read.
    for (path, with) in in_flight.into_inner().unwrap_or_else(|p| p.into_inner()) {
        done(with, Outcome::Unread(path));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DigestLanes, NoProgress};
    use std::os::unix::fs::symlink;
    use trawl_digest::Algorithm;

    /// A root with `kept/f` (6 bytes), `big` (100 bytes), a FIFO, a directory link `sub` and
    /// a file link `kept/g` leading outside it, and a link `in` to `kept` inside it.
    fn fixture() -> (tempfile::TempDir, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        std::fs::create_dir_all(root.join("kept")).unwrap();
        std::fs::write(root.join("kept/f"), b"inside").unwrap();
        std::fs::write(root.join("big"), [7u8; 100]).unwrap();
        std::fs::create_dir_all(top.path().join("outside")).unwrap();
        std::fs::write(top.path().join("outside/f"), b"outside").unwrap();
        symlink(top.path().join("outside"), root.join("sub")).unwrap();
        symlink(top.path().join("outside/f"), root.join("kept/g")).unwrap();
        symlink("kept", root.join("in")).unwrap();
        std::process::Command::new("mkfifo")
            .arg(root.join("fifo"))
            .status()
            .unwrap();
        (top, root)
    }

    /// Each name's outcome, in words, sorted by name.
    fn read_all(root: &Path, links: Links, cap: Option<u64>, names: &[&str]) -> Vec<String> {
        let source = LocalRoots::new(vec![root.to_path_buf()], links);
        let cfg = ScanConfig::new(vec![root.to_path_buf()]);
        let lanes = DigestLanes(vec![Algorithm::Sha256]);
        let reading = Reading {
            source: &source,
            cfg: &cfg,
            lanes: &lanes,
            cap,
            announce: true,
        };
        let mut got = Vec::new();
        read_named(
            &reading,
            &NoProgress,
            &Stop::new(),
            |f| {
                for n in names {
                    let _ = f.send(0, n.as_bytes(), n.to_string());
                }
            },
            |name, o| {
                let what = match o {
                    Outcome::Read(r) => format!("read {} {}", r.size, r.digests().len()),
                    Outcome::Gone(_) => "gone".into(),
                    Outcome::Refused { why, .. } => format!("refused: {why}"),
                    Outcome::Failed(e) => format!("failed: {e}"),
                    Outcome::Unread(_) => "unread".into(),
                };
                got.push(format!("{name} {what}"));
            },
        );
        got.sort();
        got
    }

    #[test]
    fn every_name_is_answered_once_beneath_its_root() {
        let (_t, root) = fixture();
        let got = read_all(
            &root,
            Links::Beneath,
            None,
            &[
                "kept/f",
                "sub/f",
                "kept/g",
                "gone/f",
                "kept/none",
                "fifo",
                "in/f",
            ],
        );
        assert_eq!(got.len(), 7, "{got:?}");
        // Found not to be a regular file when opened: the engine's read error says so.
        assert!(
            got[0].starts_with("fifo failed: ") && got[0].ends_with("FIFO (named pipe), not read"),
            "{got:?}"
        );
        assert_eq!(got[1], "gone/f gone");
        assert_eq!(
            got[2], "in/f read 6 1",
            "a link on the way that stays inside"
        );
        assert_eq!(got[3], "kept/f read 6 1");
        assert!(got[4].starts_with("kept/g failed: "), "{got:?}");
        assert_eq!(got[5], "kept/none gone");
        assert_eq!(
            got[6],
            "sub/f refused: leads outside the root through a symbolic link: not read"
        );
    }

    #[test]
    fn a_following_source_follows_links_inside_only() {
        let (_t, root) = fixture();
        let got = read_all(
            &root,
            Links::FollowInside,
            None,
            &["kept/g", "in/f", "../x"],
        );
        assert_eq!(
            got[0],
            "../x refused: leads outside the root through a symbolic link: not read"
        );
        assert_eq!(got[1], "in/f read 6 1");
        // A link at the name's end that leads out: refused by the rule, as one on the way is.
        assert_eq!(
            got[2],
            "kept/g refused: leads outside the root through a symbolic link: not read"
        );
        // Followed wherever they lead.
        let got = read_all(&root, Links::Follow, None, &["kept/g"]);
        assert_eq!(got, ["kept/g read 7 1"]);
    }

    #[test]
    fn a_file_over_the_cap_is_refused_unread() {
        let (_t, root) = fixture();
        let got = read_all(&root, Links::Beneath, Some(10), &["big", "kept/f"]);
        assert_eq!(
            got,
            [
                "big refused: larger than 10 bytes: not read",
                "kept/f read 6 1"
            ]
        );
    }

    #[test]
    fn names_sent_after_a_stop_are_unread_or_not_sent() {
        let (_t, root) = fixture();
        let source = LocalRoots::new(vec![root.clone()], Links::Beneath);
        let cfg = ScanConfig::new(vec![root.clone()]);
        let lanes = DigestLanes(vec![Algorithm::Sha256]);
        let reading = Reading {
            source: &source,
            cfg: &cfg,
            lanes: &lanes,
            cap: None,
            announce: false,
        };
        let stop = Stop::new();
        stop.request(Reason::Signal(2));
        let mut answered = 0;
        let sent = read_named(
            &reading,
            &NoProgress,
            &stop,
            |f| f.send(0, b"kept/f", ()),
            |(), o| {
                assert!(matches!(o, Outcome::Unread(_)), "{o:?}");
                answered += 1;
            },
        );
        assert!(
            sent.is_break() && answered == 0,
            "refused before it was queued"
        );
    }

    #[test]
    fn a_known_entry_keeps_its_identity_and_is_read_beneath() {
        let (_t, root) = fixture();
        let source = LocalRoots::new(vec![root.clone()], Links::Beneath);
        let mut r = source.resolver();
        let e = FileEntry {
            size: 42,
            ..FileEntry::named(&root.join("kept/f"))
        };
        let k = r.known(e).unwrap();
        assert_eq!(k.size, 42, "the caller's size is kept");
        assert!(k.dir.is_some(), "opened by its name in its directory");
        let out = r.known(FileEntry::named(&root.join("sub/f"))).unwrap_err();
        assert!(matches!(
            out,
            Outcome::Refused {
                why: Refusal::Outside,
                ..
            }
        ));
    }
}
