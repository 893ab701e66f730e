//! Bag validation per RFC 8493, accepting bags of BagIt 0.93 to 1.0.
//!
//! A bag is *valid* when it is complete (every file of every payload manifest present, nothing in
//! `data/` unlisted, every payload manifest listing the same files, Payload-Oxum right) and every
//! digest matches. A holey bag (fetch.txt naming files not present) is reported with what would
//! have to be fetched; trawl never fetches. SHOULD-level findings are warnings and do not make a
//! bag invalid.
//!
//! The rooms: [`tree`] is where the bag's files are read from (a [`BagTree`]: [`disk`]'s
//! directory, or a store's objects), [`tags`] loads the tag files, [`manifests`] reads payload
//! manifests, [`merge`] sets the listings against the payload, [`declaration`] checks
//! `bagit.txt`'s form; this module runs them in order ([`validate`], [`validate_tree`]).

use std::collections::BTreeSet;
use std::path::Path;

use trawl_digest::Algorithm;
use trawl_report::{BagFinding, BagReport};
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::Stop;

use crate::payload::{Spools, digest_reader};
use crate::{BagError, io_err};

mod declaration;
mod disk;
mod manifests;
mod merge;
mod tags;
mod tree;

pub(crate) use declaration::declaration_deviations;
pub use disk::DiskBag;
pub(crate) use disk::open_tag;
pub(crate) use merge::{Sink, check_payload};
pub(crate) use tags::{Bag, load};
pub(crate) use tree::read_tag;
pub use tree::{BagTree, Payload};
use {manifests::*, tags::*};

/// BagIt versions whose bags trawl reads.
pub const SUPPORTED_VERSIONS: [&str; 6] = ["0.93", "0.94", "0.95", "0.96", "0.97", "1.0"];

/// What validation found.
pub(crate) type Report = BagReport;

/// Validates the bag at `root`. `fast`: everything but the payload's digests (structure, the
/// file list against every manifest and fetch.txt, Payload-Oxum): no payload byte is read.
pub fn validate(
    root: &Path,
    fast: bool,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
) -> Result<Report, BagError> {
    validate_tree(&DiskBag::open(root)?, fast, cfg, progress, stop, spools)
}

/// Validates the bag `tree` holds, wherever it is, as [`validate`] does a directory: the same
/// findings for the same files.
pub fn validate_tree(
    tree: &dyn BagTree,
    fast: bool,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
) -> Result<Report, BagError> {
    let mut report = Report {
        fast,
        ..Report::default()
    };
    let bag = load(tree, &mut report, spools)?;
    let on_disk = tree.payload(&mut report, spools)?;

    payload_oxum(&bag, &on_disk, fast, &mut report);
    // Completeness (every listed file present, nothing unlisted, the manifests agreeing) and,
    // unless fast, every present listed file's digests, in one merge of the sorted listings.
    let algs = bag.payload_algorithms();
    check_payload(
        tree,
        &bag,
        &on_disk,
        fast,
        &algs,
        cfg,
        progress,
        stop,
        spools,
        &mut report,
        None,
    )?;
    if fast {
        return Ok(report);
    }

    check_tag_manifests(tree, &bag, &mut report)?;
    if algs
        .iter()
        .all(|a| matches!(a, Algorithm::Md5 | Algorithm::Sha1))
        && !algs.is_empty()
    {
        report.warnings.push(BagFinding::bag(
            "payload manifests use only md5/sha1; RFC 8493 recommends sha256 or sha512",
        ));
    }
    Ok(report)
}

/// Payload-Oxum (octets.streams) against the payload listed; fast validation needs one.
pub(crate) fn payload_oxum(bag: &Bag, on_disk: &Payload, fast: bool, report: &mut Report) {
    match bag.info_value("Payload-Oxum") {
        Some(ox) => match ox
            .split_once('.')
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        {
            Some((bytes, count)) => {
                let (b, c) = (on_disk.bytes, on_disk.count);
                // A holey bag's Oxum counts files not yet fetched.
                if (b, c) != (bytes, count) && bag.fetch_count == 0 {
                    report.errors.push(BagFinding::about("bag-info.txt", format!("Payload-Oxum is {bytes}.{count} but the payload holds {b} bytes in {c} files")));
                }
            }
            None => report.errors.push(BagFinding::about(
                "bag-info.txt",
                format!("malformed Payload-Oxum '{ox}'"),
            )),
        },
        None if fast => report.errors.push(BagFinding::bag(
            "fast validation needs a Payload-Oxum in bag-info.txt",
        )),
        None => report.warnings.push(BagFinding::about(
            "bag-info.txt",
            "no Payload-Oxum (RFC 8493 says it SHOULD be there)",
        )),
    }
}

/// The tag manifests' entries checked (a tag file's digest, never a payload file), and the tag
/// files they SHOULD list.
pub(crate) fn check_tag_manifests(
    tree: &dyn BagTree,
    bag: &Bag,
    report: &mut Report,
) -> Result<(), BagError> {
    let root = tree.root();
    let mut tag_listed = BTreeSet::new();
    for m in &bag.tag {
        for e in &m.entries {
            tag_listed.insert(e.path.clone());
            if e.path.starts_with("data/") {
                report.errors.push(BagFinding::at_line(
                    &m.file,
                    e.line,
                    format!("'{}' is a payload file", e.path),
                ));
                continue;
            }
            let Some(alg) = m.algorithm else { continue };
            let hashed = tree.open_tag(&e.path).and_then(|f| {
                f.map(|f| digest_reader(f, &[alg]).map_err(io_err(&root.join(&e.path))))
                    .transpose()
            });
            match hashed {
                Ok(Some(d)) => {
                    let actual = hex::encode(&d[0]);
                    if actual != e.digest {
                        report.errors.push(BagFinding::about(
                            &e.path,
                            format!(
                                "{alg} mismatch ({} line {}): manifest has {}, file has {actual}",
                                m.file, e.line, e.digest
                            ),
                        ));
                    }
                }
                Ok(None) => report.errors.push(BagFinding::about(
                    &e.path,
                    format!("listed in {} but missing", m.file),
                )),
                Err(err) => report.errors.push(BagFinding::about(
                    &e.path,
                    format!("listed in {} but cannot be read: {err}", m.file),
                )),
            }
        }
    }
    warn_unlisted(tree, bag, &tag_listed, report);
    Ok(())
}

/// The tag files the tag manifests SHOULD list and do not (`tag_listed`), each a warning;
/// none in a bag without tag manifests.
fn warn_unlisted(
    tree: &dyn BagTree,
    bag: &Bag,
    tag_listed: &BTreeSet<String>,
    report: &mut Report,
) {
    if !bag.tag.is_empty() {
        for name in ["bagit.txt", "bag-info.txt", "fetch.txt"]
            .into_iter()
            .map(String::from)
            .chain(bag.payload.iter().map(|m| m.file.clone()))
        {
            if tree.has(&name) && !tag_listed.contains(&name) {
                report.warnings.push(BagFinding::about(
                    &name,
                    "not listed in the tag manifests (it SHOULD be)",
                ));
            }
        }
    }
}
