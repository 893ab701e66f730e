//! A bag that is a directory on disk ([`DiskBag`]): its tag files opened beneath it, its
//! payload the regular files a walk of `data/` finds, read through the disk's reading service.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_read::{Refused, RootDir, open_beneath, plain_segments};
use trawl_report::{BagFinding, BagReport};
use trawl_scan::{Links, LocalRoots, Source};
use trawl_stop::Stop;

use crate::payload::Spools;
use crate::{BagError, io_err};

use super::*;

/// A bag on disk: the directory, opened once.
pub struct DiskBag {
    root: PathBuf,
    dir: RootDir,
    source: LocalRoots,
}

impl DiskBag {
    /// The bag at `root`, which must be a directory.
    pub fn open(root: &Path) -> Result<DiskBag, BagError> {
        let md = std::fs::metadata(root).map_err(io_err(root))?;
        if !md.is_dir() {
            return Err(BagError::Refused {
                path: root.to_path_buf(),
                msg: "not a directory".into(),
            });
        }
        Ok(DiskBag {
            root: root.to_path_buf(),
            dir: RootDir::open(root).map_err(io_err(root))?,
            source: LocalRoots::new(vec![root.to_path_buf()], Links::Beneath),
        })
    }

    /// The tag file `name` opened as [`open_tag`] opens it.
    pub(crate) fn open_file(&self, name: &str) -> Result<Option<std::fs::File>, BagError> {
        open_tag(&self.root, &self.dir, name)
    }
}

impl BagTree for DiskBag {
    fn root(&self) -> &Path {
        &self.root
    }

    fn open_tag(&self, name: &str) -> Result<Option<Box<dyn std::io::Read + '_>>, BagError> {
        Ok(self
            .open_file(name)?
            .map(|f| Box::new(f) as Box<dyn std::io::Read>))
    }

    fn has(&self, name: &str) -> bool {
        self.root.join(name).exists()
    }

    fn names_at_top(&self) -> Result<Vec<String>, BagError> {
        names_at_top(&self.root)
    }

    fn payload_directory(&self, report: &mut BagReport) {
        payload_directory(&self.root, report)
    }

    fn odd_tag_entries(&self, report: &mut BagReport) -> Result<(), BagError> {
        special_tag_files(&self.root, Path::new(""), report)
    }

    fn payload(&self, report: &mut BagReport, spools: &Spools) -> Result<Payload, BagError> {
        payload_files(&self.root, report, spools)
    }

    fn source(&self) -> &dyn Source {
        &self.source
    }

    fn interrupted_creation(&self) -> bool {
        // A creation in place that was cut short leaves its journal.
        std::fs::symlink_metadata(self.root.join(crate::create::JOURNAL)).is_ok()
    }
}

/// Walks `root/data` into a [`Payload`]; what cannot be listed goes into `report`.
fn payload_files(root: &Path, report: &mut Report, spools: &Spools) -> Result<Payload, BagError> {
    let data = root.join("data");
    let (tx, rx) = crossbeam_channel::bounded(1024);
    let stop = Stop::new();
    let roots = vec![data.clone()];
    let opts = trawl_walk::WalkOptions::default();
    let mut spool = spools.spool(2);
    let (mut count, mut bytes) = (0u64, 0u64);
    let pushed = std::thread::scope(|s| {
        s.spawn(|| {
            trawl_walk::walk(&roots, &opts, &tx, &stop, &|_| {});
            drop(tx);
        });
        let mut pushed = Ok(());
        for item in rx {
            match item {
                trawl_walk::WalkItem::File(f) => {
                    let rel = f.path.strip_prefix(root).unwrap_or(&f.path);
                    match rel.to_str() {
                        Some(s) => {
                            count += 1;
                            bytes += f.size;
                            if pushed.is_ok() {
                                pushed = spool.push(s.as_bytes(), &f.size.to_be_bytes());
                                if pushed.is_err() {
                                    stop.request(trawl_stop::Reason::Failed);
                                }
                            }
                        }
                        None => report.errors.push(BagFinding::about(
                            rel.display(),
                            "name is not valid UTF-8 and cannot be listed in a manifest",
                        )),
                    }
                }
                trawl_walk::WalkItem::Skipped { path, kind } => report
                    .warnings
                    .push(BagFinding::about(path.display(), skipped(kind))),
                trawl_walk::WalkItem::Error(e) => report.errors.push(BagFinding::from_error(&e)),
                // A bag is validated whole: this walk excludes nothing.
                trawl_walk::WalkItem::Excluded(_) => {}
            }
        }
        pushed
    });
    pushed.map_err(spools.err())?;
    Ok(Payload {
        files: Arc::new(spool.finish().map_err(spools.err())?),
        count,
        bytes,
    })
}

/// What the walk of the payload passed over, as its warning says it.
fn skipped(kind: trawl_walk::SkipKind) -> String {
    match kind {
        // A bag is read as it is: a link in its payload is never followed.
        trawl_walk::SkipKind::Symlink => {
            "symbolic link in payload (a bag holds none; not followed)".to_string()
        }
        k => format!("{} in payload", k.describe()),
    }
}

/// Opens the tag file `name` (relative to the bag) as payload files are opened: beneath the bag
/// only (a symbolic link that leaves it is refused), never blocking (a FIFO is refused), a
/// regular file only. `None`: no such file.
pub(crate) fn open_tag(
    root: &Path,
    bag: &RootDir,
    name: &str,
) -> Result<Option<std::fs::File>, BagError> {
    let p = root.join(name);
    let refused = |msg: String| BagError::Refused {
        path: p.clone(),
        msg,
    };
    let Some(segs) = plain_segments(name.as_bytes()) else {
        return Err(refused("names a file outside the bag".into()));
    };
    let file = match open_beneath(bag, segs) {
        Ok(f) => f,
        Err(Refused::Outside) => {
            return Err(refused(
                "a symbolic link that leaves the bag; not followed".into(),
            ));
        }
        Err(Refused::NotFound) => {
            return match std::fs::symlink_metadata(&p) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Ok(m) if !m.file_type().is_symlink() && !m.is_file() => {
                    Err(refused("not a regular file; not read".into()))
                }
                _ => Err(refused(
                    "cannot be opened as a regular file in the bag".into(),
                )),
            };
        }
    };
    Ok(Some(file))
}

/// What is neither a regular file, a directory nor a link outside `data/` (a FIFO, a socket, a
/// device), under `rel` and below: never read, each named in a warning, as such entries in the
/// payload are. One where bagit.txt, bag-info.txt, fetch.txt or a manifest should be was
/// refused when it was read, and one listed in a tag manifest is an error there; a link is
/// read where it is listed.
fn special_tag_files(root: &Path, rel: &Path, report: &mut Report) -> Result<(), BagError> {
    let dir = root.join(rel);
    let listed = std::fs::read_dir(&dir).and_then(|d| {
        d.map(|e| e.and_then(|e| Ok((e.file_name(), e.file_type()?))))
            .collect::<std::io::Result<Vec<_>>>()
    });
    let mut entries = match listed {
        Ok(v) => v,
        Err(e) if rel.as_os_str().is_empty() => return Err(io_err(&dir)(e)),
        Err(e) => {
            report.warnings.push(BagFinding::about(
                rel.display(),
                format!(
                    "a tag directory that cannot be listed ({e}); its entries were not looked at"
                ),
            ));
            return Ok(());
        }
    };
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, ft) in entries {
        if rel.as_os_str().is_empty() && name == "data" {
            continue;
        }
        let path = rel.join(&name);
        if ft.is_dir() {
            special_tag_files(root, &path, report)?;
        } else if !ft.is_file() && !ft.is_symlink() {
            report.warnings.push(BagFinding::about(
                path.display(),
                format!(
                    "a tag file that is a {}",
                    trawl_walk::SkipKind::of(&ft).describe()
                ),
            ));
        }
    }
    Ok(())
}

/// `data/`: a directory of the bag, not a link.
fn payload_directory(root: &Path, report: &mut Report) {
    match std::fs::symlink_metadata(root.join("data")) {
        Ok(m) if m.is_dir() => {}
        Ok(m) if m.file_type().is_symlink() => report.errors.push(BagFinding::about(
            "data/",
            "a symbolic link; the payload directory must be a directory of the bag (not followed)",
        )),
        _ => report
            .errors
            .push(BagFinding::about("data/", "payload directory is missing")),
    }
}

/// The names at the bag's top that are UTF-8, sorted (for stable messages).
fn names_at_top(root: &Path) -> Result<Vec<String>, BagError> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map_err(io_err(root))?
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io_err(root))?
        .into_iter()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    Ok(names)
}
