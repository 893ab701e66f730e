//! `bag update`: payload manifests added to a valid bag, the existing ones verified in the same
//! read pass.

use std::path::Path;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_report::bag::BagFinding;
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::Stop;

use crate::BagError;
use crate::payload::{Listing, Spools};
use crate::validate::{self, Report};

use super::*;

/// Adds payload manifests for `new_algs` to a valid bag, verifying the existing manifests in the
/// same read pass; refuses (changing nothing) if the bag does not validate.
/// What [`update`] did: the validation of the bag as it was, and the algorithms it added (none
/// when the bag does not validate, or when every one asked for was there already).
#[derive(Debug)]
pub struct Updated {
    /// The validation of the bag as it was.
    pub report: Report,
    /// The algorithms added.
    pub added: Vec<Algorithm>,
    /// Asked for, and already in the bag.
    pub present: Vec<Algorithm>,
}

/// Adds payload (and tag) manifests for `new_algs` to the bag at `root`, reading the payload
/// once to compute them and to verify the manifests it has; changes nothing unless the bag
/// validates.
pub fn update(
    root: &Path,
    new_algs: &[Algorithm],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
) -> Result<Updated, BagError> {
    let mut report = Report::default();
    let bag = validate::load(root, &mut report, spools)?;
    let on_disk = validate::payload_files(root, &mut report, spools)?;
    let existing = bag.payload_algorithms();
    let mut all = existing.clone();
    for a in new_algs {
        if !all.contains(a) {
            all.push(*a);
        }
    }
    let (present, add): (Vec<Algorithm>, Vec<Algorithm>) =
        new_algs.iter().partition(|a| existing.contains(a));
    // The new algorithms' digests of every file, by path, as the check reads them.
    let mut fresh = spools.spool(2);
    let mut value = Vec::new();
    validate::check_payload(
        &bag,
        &on_disk,
        false,
        &all,
        cfg,
        progress,
        stop,
        spools,
        &mut report,
        Some(&mut |path: &str, digests: &[(Algorithm, Vec<u8>)]| {
            value.clear();
            for a in &add {
                if let Some((_, d)) = digests.iter().find(|(b, _)| b == a) {
                    value.extend_from_slice(d);
                }
            }
            fresh.push(path.as_bytes(), &value).map_err(spools.err())
        }),
    )?;
    if stop.is_stopping() {
        return Err(refused(root, "interrupted; nothing was changed"));
    }
    if !report.errors.is_empty() {
        return Ok(Updated {
            report,
            added: Vec::new(),
            present,
        });
    }
    for a in add.iter().filter(|a| !a.is_bagit_standard()) {
        report.warnings.push(BagFinding::about(
            format!("manifest-{}.txt", a.bagit_name()),
            format!("{a} is trawl's own: other BagIt tools (bagit-python) will not check it"),
        ));
    }
    if add.is_empty() {
        return Ok(Updated {
            report,
            added: add,
            present,
        });
    }
    let fresh = Arc::new(fresh.finish().map_err(spools.err())?);
    let listing = Listing {
        sorted: &fresh,
        layout: &add,
        prefix: b"",
        skip: 0,
    };
    let mut tag_algs: Vec<Algorithm> = bag.tag.iter().filter_map(|m| m.algorithm).collect();
    for a in &add {
        if !tag_algs.contains(a) {
            tag_algs.push(*a);
        }
    }
    write_tag_files(root, &listing, &add, None, &tag_algs)?;
    Ok(Updated {
        report,
        added: add,
        present,
    })
}
