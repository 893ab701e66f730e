//! The payload as it is on disk: the regular files under `data/`.

use std::path::Path;
use std::sync::Arc;

use trawl_report::BagFinding;
use trawl_spool::Sorted;
use trawl_stop::Stop;

use crate::BagError;
use crate::payload::Spools;

use super::*;

/// The regular files under `root/data`.
pub struct OnDisk {
    /// By path (`data/...`), each with its size (8 bytes, big-endian).
    pub files: Arc<Sorted>,
    pub count: u64,
    pub bytes: u64,
}

/// Walks `root/data` into an [`OnDisk`]; what cannot be listed goes into `report`.
pub fn payload_files(
    root: &Path,
    report: &mut Report,
    spools: &Spools,
) -> Result<OnDisk, BagError> {
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
    Ok(OnDisk {
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
