//! Reading a batch of objects' content: every file once, through the scan engine's reading
//! path, with every algorithm any of the batch's inventories asks for; each digest then held
//! against what the inventories give.

use std::path::Path;

use trawl_bag::Hashed;
use trawl_digest::Algorithm;
use trawl_report::JsonPath;
use trawl_report::ocfl::{ObjectReport, OcflFinding};
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::Stop;

use crate::object::ContentRead;

/// An object whose structure is checked and whose content waits to be read.
pub(crate) struct Pending {
    /// The object's directory below the batch's root (empty: the root is the object).
    pub rel: crate::object::Name,
    pub report: ObjectReport,
    pub reads: Vec<ContentRead>,
    /// A content file was left unread by a stop: the object is unchecked, not reported.
    pub interrupted: bool,
}

fn error(code: &'static str, path: &str, message: String) -> OcflFinding {
    OcflFinding {
        code,
        path: Some(JsonPath::from(path)),
        message,
    }
}

/// Reads every pending object's content under `root` and adds what it finds to each report.
pub(crate) fn read(
    root: &Path,
    batch: &mut [Pending],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
) {
    let mut algs: Vec<Algorithm> = Vec::new();
    let mut work = Vec::new();
    for (i, p) in batch.iter_mut().enumerate() {
        for r in std::mem::take(&mut p.reads) {
            for e in &r.expect {
                if !algs.contains(&e.alg) {
                    algs.push(e.alg);
                }
            }
            let rel = crate::object::join(&p.rel, r.path.as_bytes());
            work.push((rel, i, r));
        }
    }
    if work.is_empty() {
        return;
    }
    trawl_bag::hash_stream(
        root,
        &algs,
        cfg,
        progress,
        stop,
        move |feeder| {
            for (rel, i, r) in work {
                if !feeder.send_bytes(&rel, (i, r)) {
                    break;
                }
            }
        },
        |_rel, (i, r): (usize, ContentRead), hashed| {
            if stop.is_stopping() && !matches!(hashed, Hashed::Digests { .. }) {
                batch[i].interrupted = true;
                return;
            }
            let report = &mut batch[i].report;
            match hashed {
                Hashed::Digests { size, digests } => {
                    report.files_checked += 1;
                    report.bytes_checked += size;
                    for e in &r.expect {
                        let actual = digests
                            .iter()
                            .find(|(a, _)| *a == e.alg)
                            .map(|(_, d)| hex::encode(d))
                            .unwrap_or_default();
                        if actual != e.digest {
                            let whose = if e.code == "E093" {
                                "fixity block"
                            } else {
                                "manifest"
                            };
                            report.errors.push(error(
                                e.code,
                                &r.path,
                                format!(
                                    "{} is {actual}, but the {whose} of {} gives {}",
                                    e.alg_name,
                                    inventories(&e.from),
                                    e.digest
                                ),
                            ));
                        }
                    }
                }
                Hashed::Unreadable(f) => {
                    report.unreadable += 1;
                    report.errors.push(error(
                        "E092",
                        &r.path,
                        format!("cannot be read: {}", f.message),
                    ));
                }
                Hashed::Failed(f) => {
                    report
                        .errors
                        .push(error("E092", &r.path, format!("not read: {}", f.message)))
                }
            }
        },
    );
}

/// `the root inventory`, `v1's inventory`, `v1's and v2's inventories`.
fn inventories(from: &[String]) -> String {
    let names: Vec<String> = from
        .iter()
        .map(|f| {
            if f == "root" {
                "the root's".into()
            } else {
                format!("{f}'s")
            }
        })
        .collect();
    match names.as_slice() {
        [one] => format!("{one} inventory"),
        many => format!("{} inventories", many.join(" and ")),
    }
}
