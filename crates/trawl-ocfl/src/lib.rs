//! OCFL (the Oxford Common File Layout, specifications 1.0 and 1.1): validating storage roots
//! and objects, with the specification's validation codes.
//!
//! Everything but the content is checked from the inventories and the directory listings, one
//! object at a time; the content is then read by the scan engine (as `trawl scan` reads, one
//! read per file with every algorithm the inventories ask for), a batch of objects at a time,
//! and each object's report handed on as soon as its batch is done. Memory holds one batch,
//! never the whole storage root.
//!
//! The face: [`validate`] (a storage root or an object), its reports in
//! `trawl_report::ocfl`, and [`OcflError`] when nothing could be checked; [`OcflSource`], an
//! audit's walk and reads over storage roots (each version's files under their logical paths,
//! the inventories' digests as the expected ones).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod content;
mod inventory;
mod log;
mod object;
mod root;
mod source;

use std::path::{Path, PathBuf};

use trawl_report::ocfl::{ObjectReport, OcflSummary};
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::Stop;

pub use crate::source::OcflSource;

use crate::content::Pending;
use crate::log::Log;

/// Objects whose content is read together (and, as many, checked ahead while it is).
const BATCH_OBJECTS: usize = 128;
/// Content files read together (their paths and digests are what a batch holds).
const BATCH_FILES: usize = 8 * 1024;

/// Why nothing could be checked.
#[derive(Debug, thiserror::Error)]
pub enum OcflError {
    /// The path could not be listed (missing, not a directory, no permission).
    #[error("{}: {source}", path.display())]
    Io {
        /// The path given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Validates the storage root or object at `path`, handing each object's report to `each` as
/// soon as it is complete, in the hierarchy's name order. Returns the totals, with the
/// findings about the storage root itself.
pub fn validate(
    path: &Path,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    each: &mut dyn FnMut(&ObjectReport),
) -> Result<OcflSummary, OcflError> {
    let entries = object::list(path).map_err(|source| OcflError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let shown = path.display().to_string();
    let mut summary = OcflSummary {
        path: shown.clone(),
        complete: true,
        ..OcflSummary::default()
    };
    if root::is_storage_root(&entries) || root::lacks_declaration(&entries) {
        let mut log = Log::default();
        // A directory below a storage root is part of its hierarchy: walked as the root's own
        // directories are, the root's own checks left to the root.
        let below = (!root::is_storage_root(&entries))
            .then(|| root::enclosing_root(path))
            .flatten();
        let version = match below {
            Some((_, v)) => {
                summary.kind = "storage_hierarchy";
                // Its files are not a root's own: a file outside any object (E072).
                for (name, _) in entries.iter().filter(|(_, k)| *k != object::Kind::Dir) {
                    log.error(
                        "E072",
                        name,
                        "a file in the storage hierarchy outside any object",
                    );
                }
                Some(v)
            }
            None => {
                summary.kind = "storage_root";
                root::check_root(path, &entries, &mut log)
            }
        };
        summary.spec = version.clone();
        // The hierarchy is walked and each object's structure checked on one thread while the
        // objects before are read on the engine's: at most two batches are held.
        let (tx, rx) = crossbeam_channel::bounded::<Pending>(BATCH_OBJECTS);
        let log = std::thread::scope(|s| {
            let walker = s.spawn(|| {
                let mut walk = root::Walk::new(path, &entries);
                while let Some((rel, declared)) = walk.next(&mut log) {
                    if stop.is_stopping() {
                        break;
                    }
                    let mut p = pending(path, &rel, &shown);
                    if let Some(v) = &version
                        && declared.as_str() > v.as_str()
                    {
                        p.report.errors.push(trawl_report::ocfl::OcflFinding {
                            code: "E081",
                            path: None,
                            message: format!(
                                "the object follows specification {declared}, newer than the storage root's {v}"
                            ),
                        });
                    }
                    if tx.send(p).is_err() {
                        break;
                    }
                }
                drop(tx);
                log
            });
            let mut batch: Vec<Pending> = Vec::new();
            let mut files = 0;
            for p in rx.iter() {
                files += p.reads.len();
                batch.push(p);
                if batch.len() >= BATCH_OBJECTS || files >= BATCH_FILES {
                    read_and_hand_on(path, &mut batch, cfg, progress, stop, &mut summary, each);
                    files = 0;
                }
            }
            read_and_hand_on(path, &mut batch, cfg, progress, stop, &mut summary, each);
            walker
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
        summary.errors += log.errors.len() as u64;
        summary.warnings += log.warnings.len() as u64;
        summary.root_errors = log.errors;
        summary.root_warnings = log.warnings;
    } else {
        summary.kind = "object";
        let p = pending(path, "", &shown);
        summary.spec = Some(p.report.spec.clone());
        read_and_hand_on(path, &mut vec![p], cfg, progress, stop, &mut summary, each);
    }
    summary.complete = !stop.is_stopping();
    Ok(summary)
}

/// Reads a batch's content, then adds each object's report to the totals and hands it on.
fn read_and_hand_on(
    root: &Path,
    batch: &mut Vec<Pending>,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    summary: &mut OcflSummary,
    each: &mut dyn FnMut(&ObjectReport),
) {
    content::read(root, batch, cfg, progress, stop);
    for p in batch.drain(..).filter(|p| !p.interrupted) {
        summary.add(&p.report);
        each(&p.report);
    }
}

/// The object at `rel` below `root`, its structure checked.
fn pending(root: &Path, rel: &str, shown: &str) -> Pending {
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let checked = object::check(&dir);
    let path = if rel.is_empty() {
        shown.to_string()
    } else {
        format!("{}/{rel}", shown.trim_end_matches('/'))
    };
    Pending {
        rel: rel.to_string(),
        report: ObjectReport {
            path,
            id: checked.id,
            spec: checked.spec,
            errors: checked.log.errors,
            warnings: checked.log.warnings,
            ..ObjectReport::default()
        },
        reads: checked.reads,
        interrupted: false,
    }
}
