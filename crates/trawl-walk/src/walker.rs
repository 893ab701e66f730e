//! The walker: each root inspected, then its tree listed by `tree.rs`, every item sent to the
//! caller's channel one by one or in batches of [`BATCH`].

use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use trawl_read::{Stage, Stages};
use trawl_stop::Stop;

use crossbeam_channel::Sender;

use crate::{FileEntry, SkipKind, WalkError, WalkItem, WalkOptions, tree};

/// Walks `roots` with several threads, sending every item to `tx` (a bounded channel: the walk
/// waits when the readers fall behind). Returns when the walk is complete or `stop` is set.
/// `observe` sees every item just before it is sent (the progress display counts what is found).
pub fn walk(
    roots: &[PathBuf],
    opts: &WalkOptions,
    tx: &Sender<WalkItem>,
    stop: &Stop,
    observe: &(dyn Fn(&WalkItem) + Sync),
) {
    walk_roots(roots, opts, Tx::One(tx), stop, observe);
}

/// Items per message of [`walk_batched`]: one message per file made channel traffic (and the
/// spinning and waking of its waiters) a large part of the cost of a small file.
pub const BATCH: usize = 64;

/// As [`walk`], sending the items in batches of up to [`BATCH`] (each walking thread fills its
/// own; what is left is sent when it finishes).
pub fn walk_batched(
    roots: &[PathBuf],
    opts: &WalkOptions,
    tx: &Sender<Vec<WalkItem>>,
    stop: &Stop,
    observe: &(dyn Fn(&WalkItem) + Sync),
) {
    walk_roots(roots, opts, Tx::Batch(tx), stop, observe);
}

fn walk_roots(
    roots: &[PathBuf],
    opts: &WalkOptions,
    tx: Tx<'_>,
    stop: &Stop,
    observe: &(dyn Fn(&WalkItem) + Sync),
) {
    let out = Out {
        tx,
        observe,
        stages: &opts.stages,
    };
    for (idx, root) in roots.iter().enumerate() {
        if stop.is_stopping() {
            return;
        }
        walk_root(idx, root, opts, &out, stop);
    }
}

#[derive(Clone, Copy)]
enum Tx<'a> {
    One(&'a Sender<WalkItem>),
    Batch(&'a Sender<Vec<WalkItem>>),
}

pub(crate) struct Out<'a> {
    tx: Tx<'a>,
    observe: &'a (dyn Fn(&WalkItem) + Sync),
    /// Where the walking threads' CPU and waits are counted.
    pub(crate) stages: &'a Stages,
}

impl Out<'_> {
    /// Sends one item at once (the roots' own items).
    pub(crate) fn send(&self, item: WalkItem) -> bool {
        (self.observe)(&item);
        match self.tx {
            Tx::One(tx) => tx.send(item).is_ok(),
            Tx::Batch(tx) => tx.send(vec![item]).is_ok(),
        }
    }

    /// A walking thread's sender: batches where the channel takes them.
    pub(crate) fn batcher(&self) -> Batcher<'_> {
        Batcher {
            out: self,
            buf: Vec::new(),
        }
    }
}

/// Collects a walking thread's items; sends the rest when dropped (the thread is done).
pub(crate) struct Batcher<'a> {
    out: &'a Out<'a>,
    buf: Vec<WalkItem>,
}

impl Batcher<'_> {
    pub(crate) fn push(&mut self, item: WalkItem) -> bool {
        (self.out.observe)(&item);
        match self.out.tx {
            Tx::One(tx) => tx.send(item).is_ok(),
            Tx::Batch(_) => {
                self.buf.push(item);
                self.buf.len() < BATCH || self.flush()
            }
        }
    }

    fn flush(&mut self) -> bool {
        match self.out.tx {
            Tx::Batch(tx) if !self.buf.is_empty() => {
                let batch = std::mem::replace(&mut self.buf, Vec::with_capacity(BATCH));
                match tx.try_send(batch) {
                    Ok(()) => true,
                    Err(crossbeam_channel::TrySendError::Full(batch)) => {
                        // The readers are behind: the time waited for room is the walk's.
                        let t = std::time::Instant::now();
                        let sent = tx.send(batch).is_ok();
                        self.out.stages.add_wait(Stage::Walk, t.elapsed());
                        sent
                    }
                    Err(crossbeam_channel::TrySendError::Disconnected(_)) => false,
                }
            }
            _ => true,
        }
    }
}

impl Drop for Batcher<'_> {
    fn drop(&mut self) {
        self.flush();
    }
}

fn walk_root(idx: usize, root: &Path, opts: &WalkOptions, tx: &Out<'_>, stop: &Stop) {
    // A root named on the command line is inspected first so that a missing root, or a root that
    // is a FIFO, gets a precise message instead of a generic walk error.
    match std::fs::symlink_metadata(root) {
        Err(e) => {
            tx.send(WalkItem::Error(WalkError::Io {
                path: root.to_path_buf(),
                source: e,
            }));
            return;
        }
        Ok(md) => {
            let ft = md.file_type();
            let target_md = if ft.is_symlink() {
                std::fs::metadata(root).ok()
            } else {
                Some(md)
            };
            match target_md {
                None => {
                    tx.send(WalkItem::Skipped {
                        path: root.to_path_buf(),
                        kind: SkipKind::Symlink,
                    });
                    return;
                }
                Some(md) if md.is_file() => {
                    tx.send(WalkItem::File(entry(root.to_path_buf(), idx, &md)));
                    return;
                }
                Some(md) if !md.is_dir() => {
                    tx.send(WalkItem::Skipped {
                        path: root.to_path_buf(),
                        kind: SkipKind::of(&md.file_type()),
                    });
                    return;
                }
                Some(_) => {}
            }
        }
    }

    tree::walk_dir(idx, root, opts, tx, stop);
}

impl FileEntry {
    /// A file named by the caller rather than walked (root 0): its size, identity and time as
    /// `stat` gives them following links, or zeros where it cannot be looked at, for the reader
    /// to report precisely (missing, permission, not regular).
    pub fn named(path: &Path) -> FileEntry {
        match std::fs::metadata(path) {
            Ok(md) => entry(path.to_path_buf(), 0, &md),
            Err(_) => FileEntry {
                path: path.to_path_buf(),
                root: 0,
                size: 0,
                dev: 0,
                ino: 0,
                mtime_ns: 0,
                dir: None,
                open: None,
            },
        }
    }
}

pub(crate) fn entry(path: PathBuf, root: usize, md: &Metadata) -> FileEntry {
    FileEntry {
        dir: None,
        path,
        root,
        size: md.len(),
        dev: md.dev(),
        ino: md.ino(),
        // A time past 2262 does not fit in nanoseconds: it wraps (as a release build's
        // arithmetic does) the same wherever a time is taken, so equal times stay equal.
        mtime_ns: md
            .mtime()
            .wrapping_mul(1_000_000_000)
            .wrapping_add(md.mtime_nsec()),
        open: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExcludedKind, ExclusionBuilder};
    use std::collections::BTreeSet;

    fn run(root: &Path, follow: bool) -> Vec<WalkItem> {
        let opts = WalkOptions {
            follow_links: follow,
            ..Default::default()
        };
        run_with(root, &opts)
    }

    fn run_with(root: &Path, opts: &WalkOptions) -> Vec<WalkItem> {
        let (tx, rx) = crossbeam_channel::bounded(4);
        let stop = Stop::new();
        let roots = vec![root.to_path_buf()];
        std::thread::scope(|s| {
            s.spawn(|| {
                walk(&roots, opts, &tx, &stop, &|_| {});
                drop(tx);
            });
            rx.iter().collect()
        })
    }

    #[test]
    fn finds_hidden_and_ignored_files_and_skips_fifos() {
        let d = std::env::temp_dir().join(format!("trawl-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join(".git/sub")).unwrap();
        std::fs::write(d.join(".gitignore"), "*\n").unwrap();
        std::fs::write(d.join(".git/sub/x"), "x").unwrap();
        std::fs::write(d.join(".hidden"), "h").unwrap();
        let fifo = d.join("pipe");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path from a CString that outlives the call.
        assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o644) }, 0);
        std::os::unix::fs::symlink("nowhere", d.join("dangling")).unwrap();
        let items = run(&d, false);
        let files: BTreeSet<_> = items
            .iter()
            .filter_map(|i| match i {
                WalkItem::File(f) => Some(f.path.strip_prefix(&d).unwrap().to_path_buf()),
                _ => None,
            })
            .collect();
        let want: BTreeSet<PathBuf> = [".gitignore", ".git/sub/x", ".hidden"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(files, want);
        let skipped: BTreeSet<_> = items
            .iter()
            .filter_map(|i| match i {
                WalkItem::Skipped { kind, .. } => Some(kind.name()),
                _ => None,
            })
            .collect();
        assert_eq!(skipped, ["fifo", "symlink"].into_iter().collect());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn symlink_loop_is_a_skipped_entry_when_following() {
        let d = std::env::temp_dir().join(format!("trawl-walk-loop-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("a")).unwrap();
        std::os::unix::fs::symlink("..", d.join("a/up")).unwrap();
        let items = run(&d, true);
        assert!(
            items.iter().any(|i| matches!(
                i,
                WalkItem::Skipped {
                    kind: SkipKind::SymlinkLoop,
                    ..
                }
            )),
            "{items:?}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_dangling_link_followed_is_an_error_naming_where_it_points() {
        let d = std::env::temp_dir().join(format!("trawl-walk-dangling-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("here"), "x").unwrap();
        std::os::unix::fs::symlink("../gone", d.join("dangling")).unwrap();
        std::os::unix::fs::symlink("here", d.join("alias")).unwrap();
        let items = run(&d, true);
        let errors: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                WalkItem::Error(e) => Some(e.to_string()),
                _ => None,
            })
            .collect();
        assert_eq!(errors.len(), 1, "{items:?}");
        assert!(
            errors[0].ends_with("dangling: dangling symbolic link to ../gone: nothing there"),
            "{errors:?}"
        );
        // The other link is followed to its file.
        let files = items
            .iter()
            .filter(|i| matches!(i, WalkItem::File(_)))
            .count();
        assert_eq!(files, 2);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// What the rules leave out comes out as excluded items (a directory as one item, nothing
    /// below it), the rest as before; a root holding an `--exclude-if-present` name is one
    /// excluded item.
    #[test]
    fn excluded_entries_are_items_and_nothing_below_an_excluded_directory_is() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        for f in [
            "keep/a",
            "keep/b.tmp",
            "cache/x",
            "cache/deep/y",
            "box/z",
            "box/.nobackup",
        ] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), b"12345").unwrap();
        }
        std::os::unix::fs::symlink("a", d.join("keep/l.tmp")).unwrap();
        let mut b = ExclusionBuilder::new();
        for p in ["*.tmp", "cache/"] {
            b.pattern(std::ffi::OsStr::new(p)).unwrap();
        }
        b.if_present(std::ffi::OsStr::new(".nobackup")).unwrap();
        let opts = WalkOptions {
            excluding: b.build().unwrap(),
            ..Default::default()
        };
        let items = run_with(d, &opts);
        let mut got: Vec<(String, &str, Option<u64>)> = Vec::new();
        let mut files = BTreeSet::new();
        for i in &items {
            match i {
                WalkItem::Excluded(x) => got.push((
                    x.path.strip_prefix(d).unwrap().display().to_string(),
                    x.kind.name(),
                    x.size,
                )),
                WalkItem::File(f) => {
                    files.insert(f.path.strip_prefix(d).unwrap().display().to_string());
                }
                other => panic!("{other:?}"),
            }
        }
        got.sort();
        assert_eq!(
            got,
            [
                ("box".to_string(), "directory", None),
                ("cache".to_string(), "directory", None),
                ("keep/b.tmp".to_string(), "file", Some(5)),
                ("keep/l.tmp".to_string(), "symlink", None),
            ]
        );
        assert_eq!(files, ["keep/a".to_string()].into_iter().collect());
        // The root itself holding the name: one item, nothing listed.
        let items = run_with(&d.join("box"), &opts);
        assert!(
            matches!(&items[..], [WalkItem::Excluded(x)] if x.kind == ExcludedKind::Directory),
            "{items:?}"
        );
    }

    #[test]
    fn every_skip_kind_has_a_name_that_reads_back_and_says_why() {
        for k in SkipKind::ALL {
            assert_eq!(SkipKind::from_name(k.name()), Some(k));
            assert!(!k.describe().is_empty());
        }
        assert_eq!(SkipKind::from_name("nonsense"), None);
    }

    unsafe extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }
}
