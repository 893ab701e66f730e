//! `ocfl validate`: a storage root (its own checks, then its hierarchy walked and each object
//! checked, the objects' content read a batch at a time), an object, or an inventory alone.

use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use trawl_report::{JsonPath, ObjectReport, OcflSummary};
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::{Reason, Stop};

use crate::OcflError;
use crate::content::Pending;
use crate::log::Log;
use crate::tree::{DiskTree, Kind, Name, OcflDir, OcflTree};
use crate::{content, inventory, log, object, root, tree};

/// Objects whose content is read together (and, as many, checked ahead while it is).
const BATCH_OBJECTS: usize = 128;
/// Content files read together (their paths and digests are what a batch holds).
const BATCH_FILES: usize = 8 * 1024;

/// Validates the storage root, object or inventory file at `path`, handing each object's
/// report to `each` as soon as it is complete, in the hierarchy's name order (an inventory file
/// alone is reported as one object, its structure checked and nothing else). Returns the
/// totals, with the findings about the storage root itself.
pub fn validate(
    path: &Path,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    each: &mut dyn FnMut(&ObjectReport) -> ControlFlow<()>,
) -> Result<OcflSummary, OcflError> {
    let io = |source| OcflError::Io {
        path: path.to_path_buf(),
        source,
    };
    // The path the user named may be a link; what it leads to is what is checked.
    if !std::fs::metadata(path).map_err(io)?.is_dir() {
        return inventory_alone(path, each);
    }
    validate_tree(&DiskTree::new(path), cfg, progress, stop, each)
}

/// Validates the storage root, object or directory of a storage hierarchy at the top of
/// `tree` (a directory on disk, a prefix of a store), as [`validate`] does a directory.
pub fn validate_tree(
    tree: &dyn OcflTree,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    each: &mut dyn FnMut(&ObjectReport) -> ControlFlow<()>,
) -> Result<OcflSummary, OcflError> {
    let io = |source| OcflError::Io {
        path: tree.shown().to_path_buf(),
        source,
    };
    let top = tree.top().map_err(io)?;
    let entries = top.list().map_err(io)?;
    let shown = tree.shown().as_os_str().as_bytes();
    let mut summary = OcflSummary {
        path: JsonPath::from_bytes(shown),
        complete: true,
        ..OcflSummary::default()
    };
    // The run's own token: a `Break` from `each` ends this validation, not the caller's run.
    let stop = &stop.child();
    let mut run = Run {
        tree,
        cfg,
        progress,
        stop,
        summary: &mut summary,
        each,
    };
    if root::is_storage_root(&entries) || root::lacks_declaration(&entries) {
        let (mut log, version) = run.top_level(&*top, &entries);
        log = run.hierarchy(top, &entries, version, log);
        run.root_findings(log);
    } else {
        run.summary.kind = "object";
        let p = pending(top, b"", shown);
        run.summary.spec = Some(p.report.spec.clone());
        run.read_and_hand_on(&mut vec![p]);
    }
    summary.complete = !stop.is_stopping();
    Ok(summary)
}

/// One validation: what it is of and with, and its totals so far.
struct Run<'a, 'e> {
    tree: &'a dyn OcflTree,
    cfg: &'a ScanConfig,
    progress: &'a dyn Progress,
    stop: &'a Stop,
    summary: &'a mut OcflSummary,
    each: &'e mut dyn FnMut(&ObjectReport) -> ControlFlow<()>,
}

impl Run<'_, '_> {
    /// A storage root's own checks, or, for a directory below one, its files (outside any
    /// object): the findings, and the version the root declares.
    fn top_level(&mut self, top: &dyn OcflDir, entries: &[(Name, Kind)]) -> (Log, Option<String>) {
        let mut log = Log::default();
        // A directory below a storage root is part of its hierarchy: walked as the root's own
        // directories are, the root's own checks left to the root.
        let below = (!root::is_storage_root(entries))
            .then(|| self.tree.enclosing_root())
            .flatten();
        let version = match below {
            Some(v) => {
                self.summary.kind = "storage_hierarchy";
                // Its files are not a root's own: a file outside any object (E072).
                for (name, _) in entries.iter().filter(|(_, k)| *k != Kind::Dir) {
                    log.error(
                        "E072",
                        name,
                        "a file in the storage hierarchy outside any object",
                    );
                }
                Some(v)
            }
            None => {
                self.summary.kind = "storage_root";
                root::check_root(top, entries, &mut log)
            }
        };
        self.summary.spec = version.clone();
        (log, version)
    }

    /// The hierarchy walked and each object's structure checked on one thread while the
    /// objects before are read on the engine's: at most two batches are held. Returns `log`
    /// with what the walk found wrong in the hierarchy.
    fn hierarchy(
        &mut self,
        top: Box<dyn OcflDir>,
        entries: &[(Name, Kind)],
        version: Option<String>,
        mut log: Log,
    ) -> Log {
        let (tx, rx) = crossbeam_channel::bounded::<Pending>(BATCH_OBJECTS);
        let (stop, shown) = (self.stop, self.tree.shown().as_os_str().as_bytes());
        std::thread::scope(|s| {
            let walker = s.spawn(move || {
                let mut walk = root::Walk::new(top, entries);
                while let Some((rel, declared, dir)) = walk.next_object(&mut log) {
                    if stop.is_stopping() {
                        break;
                    }
                    let mut p = pending(dir, &rel, shown);
                    newer_than_root(&mut p, &declared, version.as_deref());
                    if tx.send(p).is_err() {
                        break;
                    }
                }
                log
            });
            let mut batch: Vec<Pending> = Vec::new();
            let mut files = 0;
            for p in rx.iter() {
                files += p.reads.len();
                batch.push(p);
                if batch.len() >= BATCH_OBJECTS || files >= BATCH_FILES {
                    self.read_and_hand_on(&mut batch);
                    files = 0;
                }
            }
            self.read_and_hand_on(&mut batch);
            walker
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }

    /// The storage root's own findings, added to the totals.
    fn root_findings(&mut self, log: Log) {
        let summary = &mut *self.summary;
        summary.errors += log.error_count();
        summary.warnings += log.warnings.len() as u64 + log.warnings_not_listed;
        summary.root_errors = log.errors;
        summary.root_warnings = log.warnings;
        summary.root_errors_not_listed = log.errors_not_listed;
        summary.root_warnings_not_listed = log.warnings_not_listed;
    }

    /// Reads a batch's content, then adds each object's report to the totals and hands it on.
    fn read_and_hand_on(&mut self, batch: &mut Vec<Pending>) {
        content::read(self.tree, batch, self.cfg, self.progress, self.stop);
        for p in batch.drain(..).filter(|p| !p.interrupted) {
            self.summary.add(&p.report);
            if (self.each)(&p.report).is_break() {
                // The rest of the batch is dropped with the drain.
                self.stop.request(Reason::Failed);
                return;
            }
        }
    }
}

/// An object that declares a specification newer than its storage root's (`root`): E081.
fn newer_than_root(p: &mut Pending, declared: &str, root: Option<&str>) {
    if let Some(v) = root
        && declared > v
    {
        p.report.errors.push(trawl_report::OcflFinding {
            code: "E081",
            path: None,
            message: format!(
                "the object follows specification {declared}, newer than the storage root's {v}"
            ),
        });
    }
}

/// The object at `rel` below the PATH (`shown` as the user named it), opened as `dir`, its
/// structure checked.
fn pending(dir: Box<dyn OcflDir>, rel: &[u8], shown: &[u8]) -> Pending {
    let checked = object::check(&*dir);
    let path = if rel.is_empty() {
        shown.to_vec()
    } else {
        let mut trimmed = shown;
        while let [rest @ .., b'/'] = trimmed {
            trimmed = rest;
        }
        object::join(trimmed, rel)
    };
    Pending {
        rel: rel.to_vec(),
        report: report(&path, checked.id, checked.spec, checked.log),
        reads: checked.reads,
        interrupted: false,
    }
}

/// An object's report of what `log` holds so far.
fn report(path: &[u8], id: Option<String>, spec: String, log: log::Log) -> ObjectReport {
    ObjectReport {
        path: JsonPath::from_bytes(path),
        id,
        spec,
        errors: log.errors,
        warnings: log.warnings,
        errors_not_listed: log.errors_not_listed,
        warnings_not_listed: log.warnings_not_listed,
        ..ObjectReport::default()
    }
}

/// An inventory file checked alone: its structure, as an object's root inventory's is (no
/// sidecar, no content, nothing around it).
fn inventory_alone(
    path: &Path,
    each: &mut dyn FnMut(&ObjectReport) -> ControlFlow<()>,
) -> Result<OcflSummary, OcflError> {
    let io = |source| OcflError::Io {
        path: path.to_path_buf(),
        source,
    };
    // The file the user named, through whatever link they named it by.
    let real = std::fs::canonicalize(path).map_err(io)?;
    let (Some(dir), Some(name)) = (real.parent(), real.file_name()) else {
        return Err(OcflError::NoFileName {
            path: path.to_path_buf(),
        });
    };
    let raw = trawl_read::DirAt::open(dir)
        .and_then(|d| {
            Ok(tree::read_small(
                &d,
                name.as_bytes(),
                object::INVENTORY_CAP,
            )?)
        })
        .map_err(io)?;
    let mut log = Log::default();
    let name = path
        .file_name()
        .map_or_else(Vec::new, |n| n.as_bytes().to_vec());
    let inv = inventory::check(&raw, &name, object::DEFAULT_SPEC, &mut log);
    let (id, spec) = match inv {
        Some(i) => (i.id, i.spec_version),
        None => (None, object::DEFAULT_SPEC.to_string()),
    };
    let o = report(path.as_os_str().as_bytes(), id, spec.clone(), log);
    let mut summary = OcflSummary {
        path: JsonPath::new(path),
        kind: "inventory",
        spec: Some(spec),
        complete: true,
        ..OcflSummary::default()
    };
    summary.add(&o);
    summary.complete = each(&o).is_continue();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }

    /// A `Break` from the callback ends this validation, incomplete, after the object it was
    /// handed, and leaves the caller's token unstopped (it used to stop the whole run).
    #[test]
    fn a_break_from_each_ends_this_validation_only() {
        let good = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/ocfl-fixtures/1.1/good-objects");
        if !good.is_dir() {
            eprintln!("SKIPPED: no OCFL fixtures at {}", good.display());
            return;
        }
        let t = tempfile::tempdir().unwrap();
        let root = t.path().join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("0=ocfl_1.1"), "ocfl_1.1\n").unwrap();
        for name in [
            "minimal_one_version_one_file",
            "spec-ex-full",
            "updates_all_actions",
        ] {
            copy_dir(&good.join(name), &root.join(name));
        }
        let cfg = ScanConfig::new(vec![root.clone()]);
        let stop = Stop::new();
        let whole = validate(&root, &cfg, &trawl_scan::NoProgress, &stop, &mut |_| {
            ControlFlow::Continue(())
        })
        .unwrap();
        assert!(whole.complete);
        assert_eq!(whole.objects, 3, "{whole:?}");
        let mut handed = 0;
        let cut = validate(&root, &cfg, &trawl_scan::NoProgress, &stop, &mut |_| {
            handed += 1;
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(handed, 1);
        assert!(!cut.complete);
        assert!(!stop.is_stopping(), "the caller's token is its own");
    }
}
