//! Reading the tree to bag once: each file's size and digests spooled by its path, and what
//! cannot be bagged (a special file, a link, a name that is not UTF-8) named as a problem.

use std::ops::ControlFlow;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_scan::{DigestLanes, Event, FileRecord, Input, Progress, ScanConfig};
use trawl_spool::{Sorted, Spool};
use trawl_stop::Stop;
use trawl_walk::{ExcludedKind, SkipKind};

use super::{Created, Excluded, Links};
use crate::BagError;
use crate::payload::Spools;

/// The files of a tree to bag, read once: by path relative to the tree, each with its size
/// (8 bytes, big-endian) and its digests in the algorithms' order.
pub(crate) struct Tree {
    pub(crate) files: Option<Arc<Sorted>>,
    pub(crate) count: u64,
    pub(crate) bytes: u64,
    /// Entries that cannot be bagged, the first [`PROBLEMS_SHOWN`] of them.
    pub(crate) problems: Vec<String>,
    pub(crate) more_problems: u64,
    /// With [`Links::Skip`]: each symbolic link left out, as (relative path, target).
    pub(crate) left_out: Vec<(Vec<u8>, Vec<u8>)>,
    /// What the user's rules left out (`--exclude`): not in the bag.
    pub(crate) excluded: Excluded,
}

/// How many entries that cannot be bagged are named (the rest are counted).
pub(crate) const PROBLEMS_SHOWN: usize = 1000;

impl Tree {
    /// What a creation from this tree did, before it links or copies anything; with the
    /// profile's `warnings`.
    pub(crate) fn created(&self, warnings: Vec<trawl_report::BagFinding>) -> Created {
        Created {
            files: self.count,
            bytes: self.bytes,
            links_left_out: self.left_out.len() as u64,
            warnings,
            excluded: self.excluded,
            ..Default::default()
        }
    }

    pub(crate) fn problem(&mut self, p: String) {
        if self.problems.len() < PROBLEMS_SHOWN {
            self.problems.push(p);
        } else {
            self.more_problems += 1;
        }
    }
}

/// Reads every file under `dir` once, its digests spooled by path relative to `dir`. Any file
/// that cannot be read, any special file or symlink, any name that is not UTF-8 is a problem
/// that refuses the whole operation.
pub(crate) fn digest_tree(
    dir: &Path,
    algs: &[Algorithm],
    links: Links,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
) -> Result<ControlFlow<(), Tree>, BagError> {
    let mut cfg = cfg.clone();
    cfg.roots = vec![dir.to_path_buf()];
    let engine = stop.child();
    let mut taker = Taker {
        dir,
        links,
        tree: Tree {
            files: None,
            count: 0,
            bytes: 0,
            problems: Vec::new(),
            more_problems: 0,
            left_out: Vec::new(),
            excluded: Excluded::default(),
        },
        spool: spools.spool(2),
        pushed: Ok(()),
        value: Vec::new(),
        engine: &engine,
    };
    trawl_scan::scan(
        &cfg,
        Input::Walk,
        &DigestLanes(algs.to_vec()),
        progress,
        &engine,
        &mut |ev| taker.event(ev),
    );
    let Taker {
        mut tree,
        spool,
        pushed,
        ..
    } = taker;
    pushed.map_err(spools.err())?;
    if stop.is_stopping() {
        return Ok(ControlFlow::Break(()));
    }
    tree.files = Some(Arc::new(spool.finish().map_err(spools.err())?));
    Ok(ControlFlow::Continue(tree))
}

/// What [`digest_tree`] holds while the walk runs: the tree so far, and the spool its files go
/// into (the first failure to spool stops the walk, and is kept).
struct Taker<'a> {
    dir: &'a Path,
    links: Links,
    tree: Tree,
    spool: Spool,
    pushed: std::io::Result<()>,
    /// A file's spooled value, made here (no allocation per file).
    value: Vec<u8>,
    engine: &'a Stop,
}

impl Taker<'_> {
    /// One event of the walk.
    fn event(&mut self, ev: Event) {
        let tree = &mut self.tree;
        match ev {
            Event::File(rec) => self.file(&rec),
            Event::Skipped {
                path,
                kind: SkipKind::Symlink,
            } if self.links == Links::Skip => match left_out_link(self.dir, &path) {
                Ok(link) => tree.left_out.push(link),
                Err(p) => tree.problem(p),
            },
            Event::Skipped {
                path,
                kind: SkipKind::Symlink,
            } => tree.problem(format!(
                "{}: symbolic link; a bag holds none: --links skip leaves the links out (with --out), --links follow bags what they point to",
                path.display()
            )),
            Event::Skipped { path, kind } => {
                tree.problem(format!("{}: {}", path.display(), kind.describe()))
            }
            Event::Failed(e) => tree.problem(e.to_string()),
            // Not in the bag, and no problem: the user left it out.
            Event::Excluded(x) => {
                let n = &mut tree.excluded;
                match x.kind {
                    ExcludedKind::Directory => n.directories += 1,
                    ExcludedKind::File => {
                        n.files += 1;
                        n.bytes += x.size.unwrap_or(0);
                    }
                    ExcludedKind::Other(_) => n.other += 1,
                }
            }
        }
    }

    /// A file read: counted, and spooled by its name relative to the tree (size, then
    /// digests); a name that is not UTF-8 is a problem.
    fn file(&mut self, rec: &FileRecord) {
        let tree = &mut self.tree;
        let rel = rec.path.strip_prefix(self.dir).unwrap_or(&rec.path);
        let Some(s) = rel.to_str() else {
            tree.problem(format!(
                "{}: name is not valid UTF-8; BagIt manifests are UTF-8",
                rec.path.display()
            ));
            return;
        };
        tree.count += 1;
        tree.bytes += rec.size;
        self.value.clear();
        self.value.extend_from_slice(&rec.size.to_be_bytes());
        for (_, d) in rec.digests() {
            self.value.extend_from_slice(&d);
        }
        if self.pushed.is_ok() {
            self.pushed = self.spool.push(s.as_bytes(), &self.value);
            if self.pushed.is_err() {
                self.engine.request(trawl_stop::Reason::Failed);
            }
        }
    }
}

/// A symbolic link the walk found under `dir`, left out ([`Links::Skip`]): its path relative
/// to `dir` and its target. A name that is no longer a link when its target is read (swapped
/// for a directory or a file during the run, or removed) is a problem that refuses the
/// creation, saying what it now is: listed as a link it would be a lie, and what it now holds
/// was never walked.
fn left_out_link(dir: &Path, path: &Path) -> Result<(Vec<u8>, Vec<u8>), String> {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    match std::fs::read_link(path) {
        Ok(target) => Ok((
            rel.as_os_str().as_bytes().to_vec(),
            target.into_os_string().into_vec(),
        )),
        Err(e) => {
            let now = match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_dir() => "is now a directory".to_string(),
                Ok(m) if m.is_file() => "is now a regular file".to_string(),
                Ok(m) if !m.file_type().is_symlink() => {
                    format!("is now a {}", SkipKind::of(&m.file_type()).describe())
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "is gone".to_string(),
                _ => format!("cannot be read ({e})"),
            };
            Err(format!(
                "{}: a symbolic link when the tree was listed, and {now}: it changed during the run; bag it again",
                path.display()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link the walk listed that is something else by the time its target is read (swapped
    /// for a directory during the run) is a problem naming what it now is, never a link with
    /// an empty target; a link is listed with its target.
    #[test]
    fn a_link_swapped_for_a_directory_is_named_as_what_it_now_is() {
        let t = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("some/target", t.path().join("l")).unwrap();
        assert_eq!(
            left_out_link(t.path(), &t.path().join("l")),
            Ok((b"l".to_vec(), b"some/target".to_vec()))
        );
        std::fs::create_dir(t.path().join("was-a-link")).unwrap();
        let e = left_out_link(t.path(), &t.path().join("was-a-link")).unwrap_err();
        assert!(
            e.contains("was-a-link") && e.contains("now a directory"),
            "{e}"
        );
    }
}
