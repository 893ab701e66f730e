//! Reading a batch of objects' content: every file once, through the scan engine's reading
//! path, with every algorithm any of the batch's inventories asks for; each digest then held
//! against what the inventories give.

use trawl_digest::Algorithm;
use trawl_report::{JsonPath, ObjectReport, OcflFinding};
use trawl_scan::{
    DigestLanes, FileRecord, Outcome, Progress, Reading, ScanConfig, ScanError, read_named,
};
use trawl_stop::Stop;

use crate::object::ContentRead;
use crate::tree::OcflTree;

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

/// A content file to read: its path below the batch's root, its object's index in the batch,
/// and what it must hold.
type Work = (crate::object::Name, usize, ContentRead);

/// Reads every pending object's content under `tree`'s top, through its source, and adds what
/// it finds to each report.
pub(crate) fn read(
    tree: &dyn OcflTree,
    batch: &mut [Pending],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
) {
    let (algs, work) = plan(batch);
    if work.is_empty() {
        return;
    }
    let mut cfg = cfg.clone();
    cfg.roots = vec![tree.shown().to_path_buf()];
    let lanes = DigestLanes(algs);
    let reading = Reading {
        source: tree.source(),
        cfg: &cfg,
        lanes: &lanes,
        cap: None,
        announce: true,
    };
    read_named(
        &reading,
        progress,
        stop,
        move |feeder| {
            for (rel, i, r) in work {
                if feeder.send(0, &rel, (i, r)).is_break() {
                    break;
                }
            }
        },
        |(i, r): (usize, ContentRead), outcome| {
            if stop.is_stopping() && !matches!(outcome, Outcome::Read(_)) {
                batch[i].interrupted = true;
                return;
            }
            match outcome {
                Outcome::Read(rec) => held(&mut batch[i].report, &r, &rec),
                other => not_read(&mut batch[i].report, &r, other),
            }
        },
    );
}

/// The batch's content files to read (taken from each object), and every algorithm any of
/// them is to be held to.
fn plan(batch: &mut [Pending]) -> (Vec<Algorithm>, Vec<Work>) {
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
    (algs, work)
}

/// A content file read: counted, and each digest it must have held to what it has.
fn held(report: &mut ObjectReport, r: &ContentRead, rec: &FileRecord) {
    report.files_checked += 1;
    report.bytes_checked += rec.size;
    let digests = rec.digests();
    for e in &r.expect {
        let actual = digests
            .iter()
            .find(|(a, _)| *a == e.alg)
            .map(|(_, d)| hex::encode(d))
            .unwrap_or_default();
        if actual == e.digest {
            continue;
        }
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

/// A content file not read: why, and whether that counts it unreadable.
fn not_read(report: &mut ObjectReport, r: &ContentRead, outcome: Outcome) {
    let (unreadable, why) = match outcome {
        // Read: held to its digests, not here.
        Outcome::Read(_) => return,
        Outcome::Gone(path) => (true, trawl_read::ReadError::Vanished { path }.to_string()),
        Outcome::Failed(ScanError::Read(e)) => (true, e.to_string()),
        Outcome::Failed(e) => (false, e.to_string()),
        Outcome::Refused { path, why } => (false, trawl_scan::Refused { path, why }.to_string()),
        Outcome::Unread(_) => (true, "not read (interrupted)".to_string()),
    };
    let message = if unreadable {
        report.unreadable += 1;
        format!("cannot be read: {}", message(&why))
    } else {
        format!("not read: {}", message(&why))
    };
    report.errors.push(error("E092", &r.path, message));
}

/// An error's words without the path it starts with (`PATH: reason`): the finding names the
/// content path itself.
fn message(text: &str) -> &str {
    text.split_once(": ").map_or(text, |(_, m)| m)
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
