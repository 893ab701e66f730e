//! OCFL (the Oxford Common File Layout, specifications 1.0 and 1.1): validating storage roots
//! and objects, with the specification's validation codes.
//!
//! Everything but the content is checked from the inventories and the directory listings, one
//! object at a time; the content is then read by the scan engine (as `trawl scan` reads, one
//! read per file with every algorithm the inventories ask for), a batch of objects at a time,
//! and each object's report handed on as soon as its batch is done. Memory holds one batch,
//! never the whole storage root.
//!
//! The face: [`validate`] (a storage root, an object, or an inventory file alone), its reports in
//! `trawl_report::ocfl`, and [`OcflError`] when nothing could be checked; [`OcflSource`], an
//! audit's walk and reads over storage roots (each version's files under their logical paths,
//! the inventories' digests as the expected ones).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod content;
mod inventory;
mod json;
mod log;
mod object;
mod root;
mod source;
mod tree;

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use trawl_report::JsonPath;
use trawl_report::ocfl::{ObjectReport, OcflSummary};
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::Stop;

pub use crate::source::OcflSource;

/// An inventory's bytes checked alone, for the fuzz targets: an `inventory.json` is written by
/// whoever wrote the storage root, and must give findings, never a panic, in memory bounded by
/// its size. Not part of the face.
#[doc(hidden)]
pub mod untrusted {
    use crate::log::Log;

    /// What checking found: whether the bytes were a JSON object (the rest is checked only
    /// then), each error's and warning's code as listed, and how many were past the list.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Findings {
        /// The root inventory was a JSON object.
        pub parsed: bool,
        /// The errors' codes, in the order found.
        pub errors: Vec<&'static str>,
        /// The warnings' codes, in the order found.
        pub warnings: Vec<&'static str>,
        /// Errors and warnings found past those listed.
        pub not_listed: (u64, u64),
    }

    /// Checks `raw` as an object's root inventory is checked (as specification 1.1 where its
    /// `type` names none); with `prior`, that as an earlier version's inventory (`v1`), held
    /// against the root's as an object's are.
    pub fn inventory(raw: &[u8], prior: Option<&[u8]>) -> Findings {
        let mut log = Log::default();
        let root = crate::inventory::check(
            raw,
            b"inventory.json",
            crate::object::DEFAULT_SPEC,
            &mut log,
        );
        if let (Some(root), Some(prior)) = (&root, prior)
            && let Some(earlier) =
                crate::inventory::check(prior, b"v1/inventory.json", &root.spec_version, &mut log)
        {
            crate::inventory::check_prior(root, &earlier, &mut log);
        }
        Findings {
            parsed: root.is_some(),
            errors: log.errors.iter().map(|f| f.code).collect(),
            warnings: log.warnings.iter().map(|f| f.code).collect(),
            not_listed: (log.errors_not_listed, log.warnings_not_listed),
        }
    }

    /// Why the bounded JSON reader refused bytes.
    #[derive(Debug)]
    pub enum Refused {
        /// Not JSON (or nested past serde_json's depth limit).
        NotJson(String),
        /// Holding it would take more than this budget, in bytes.
        OverBudget(usize),
    }

    /// The bounded JSON reader alone: the value it keeps (every object and string, and of an
    /// array's other elements the first), or why it refused.
    pub fn json(raw: &[u8]) -> Result<serde_json::Value, Refused> {
        crate::json::parse(raw).map_err(|e| match e {
            crate::json::ParseError::Json(e) => Refused::NotJson(e.to_string()),
            crate::json::ParseError::TooBig { budget } => Refused::OverBudget(budget),
        })
    }
}

use crate::content::Pending;
use crate::log::Log;

/// Objects whose content is read together (and, as many, checked ahead while it is).
const BATCH_OBJECTS: usize = 128;
/// Content files read together (their paths and digests are what a batch holds).
const BATCH_FILES: usize = 8 * 1024;

/// Why something could not be checked: the path given to [`validate`] (nothing was), or, for
/// an audit, an object (its inventory is not one to trust) or one of its logical files.
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
    /// The path names no file in a directory (`/`, or a name ending in `..`).
    #[error("{}: not a file in a directory", path.display())]
    NoFileName {
        /// The path given.
        path: PathBuf,
    },
    /// An object's inventory could not be read.
    #[error("{}: {source}", path.display())]
    InventoryUnread {
        /// The inventory, below its object.
        path: PathBuf,
        /// Why.
        source: trawl_read::Unread,
    },
    /// An object's inventory is not one that can be audited by (not JSON, or its first
    /// error).
    #[error("{}: {message}", path.display())]
    InventoryInvalid {
        /// The inventory, below its object.
        path: PathBuf,
        /// Its first error.
        message: String,
    },
    /// An object's inventory lists no version.
    #[error("{} lists no version (or its `versions` are not a sequence)", path.display())]
    NoVersion {
        /// The inventory, below its object.
        path: PathBuf,
    },
    /// An object's inventory names a digest algorithm trawl does not compute.
    #[error("{}: digest algorithm {algorithm}", path.display())]
    UnknownAlgorithm {
        /// The inventory, below its object.
        path: PathBuf,
        /// The algorithm it names.
        algorithm: String,
    },
    /// An object's inventory does not match its sidecar.
    #[error("{}: {message}: the inventory is not trusted", path.display())]
    Untrusted {
        /// The sidecar (or the inventory) the fault is in, below the object.
        path: PathBuf,
        /// The fault.
        message: String,
    },
    /// A logical file whose state digest the manifest does not hold (the path below the
    /// object is the audit's item's).
    #[error(
        "the inventory's state gives it digest {digest}, which its manifest does not hold: not audited"
    )]
    StateDigestUnknown {
        /// The logical file, `VERSION/LOGICAL` below its object.
        path: PathBuf,
        /// The state's digest.
        digest: String,
    },
    /// A logical file whose content path is not a file in one of the object's version
    /// directories: never looked for.
    #[error(
        "the inventory gives its content as '{content}', which is not a file in one of the object's version directories: not looked for"
    )]
    ContentOutside {
        /// The logical file, `VERSION/LOGICAL` below its object.
        path: PathBuf,
        /// The content path the inventory gives.
        content: String,
    },
    /// A logical file whose digest is not of the form of the inventory's algorithm.
    #[error(
        "the inventory's digest for it, {digest}, is not of the form of {algorithm}: not audited"
    )]
    DigestForm {
        /// The logical file, `VERSION/LOGICAL` below its object.
        path: PathBuf,
        /// The digest.
        digest: String,
        /// The inventory's algorithm.
        algorithm: String,
    },
}

/// Validates the storage root, object or inventory file at `path`, handing each object's
/// report to `each` as soon as it is complete, in the hierarchy's name order (an inventory file
/// alone is reported as one object, its structure checked and nothing else). Returns the
/// totals, with the findings about the storage root itself.
pub fn validate(
    path: &Path,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    each: &mut dyn FnMut(&ObjectReport),
) -> Result<OcflSummary, OcflError> {
    let io = |source| OcflError::Io {
        path: path.to_path_buf(),
        source,
    };
    // The path the user named may be a link; what it leads to is what is checked.
    if !std::fs::metadata(path).map_err(io)?.is_dir() {
        return inventory_alone(path, each).map_err(io);
    }
    let top = trawl_read::DirAt::open(path).map_err(io)?;
    let entries = tree::list(&top).map_err(io)?;
    let shown = path.as_os_str().as_bytes();
    let mut summary = OcflSummary {
        path: JsonPath::from_bytes(shown),
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
                root::check_root(&top, &entries, &mut log)
            }
        };
        summary.spec = version.clone();
        // The hierarchy is walked and each object's structure checked on one thread while the
        // objects before are read on the engine's: at most two batches are held.
        let (tx, rx) = crossbeam_channel::bounded::<Pending>(BATCH_OBJECTS);
        let log = std::thread::scope(|s| {
            let walker = s.spawn(|| {
                let mut walk = root::Walk::new(top, &entries);
                while let Some((rel, declared, dir)) = walk.next_object(&mut log) {
                    if stop.is_stopping() {
                        break;
                    }
                    let mut p = pending(Ok(dir), &rel, shown);
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
        summary.errors += log.error_count();
        summary.warnings += log.warnings.len() as u64 + log.warnings_not_listed;
        summary.root_errors = log.errors;
        summary.root_warnings = log.warnings;
        summary.root_errors_not_listed = log.errors_not_listed;
        summary.root_warnings_not_listed = log.warnings_not_listed;
    } else {
        summary.kind = "object";
        let p = pending(Ok(top), b"", shown);
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

/// The object at `rel` below the PATH (`shown` as the user named it), opened as `dir`, its
/// structure checked.
fn pending(dir: Result<trawl_read::DirAt, String>, rel: &[u8], shown: &[u8]) -> Pending {
    let checked = match dir {
        Ok(dir) => object::check(&dir),
        // Listed as a directory, and no longer one (swapped for a link, or gone).
        Err(e) => {
            let mut c = object::Checked {
                spec: object::DEFAULT_SPEC.into(),
                ..object::Checked::default()
            };
            c.log.error(
                "E003",
                "",
                format!("cannot open the object's directory: {e}"),
            );
            c
        }
    };
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
    each: &mut dyn FnMut(&ObjectReport),
) -> std::io::Result<OcflSummary> {
    // The file the user named, through whatever link they named it by.
    let real = std::fs::canonicalize(path)?;
    let (dir, name) = match (real.parent(), real.file_name()) {
        (Some(d), Some(n)) => (d, n),
        _ => return Err(std::io::Error::from(std::io::ErrorKind::InvalidInput)),
    };
    let raw = tree::read_small(
        &trawl_read::DirAt::open(dir)?,
        name.as_bytes(),
        object::INVENTORY_CAP,
    )?;
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
    each(&o);
    Ok(summary)
}
