//! `bag update`: payload manifests added to a valid bag, the existing ones verified in the same
//! read pass; bag-info.txt's labels set or removed, the tag manifests written again to match.

use std::path::Path;
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_report::BagFinding;
use trawl_scan::{Progress, ScanConfig};
use trawl_stop::Stop;

use crate::payload::{Listing, Spools};
use crate::validate::{self, Report};
use crate::{BagError, BagOutcome};

use super::*;

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
    /// bag-info.txt was written again with the [`InfoEdits`].
    pub info_edited: bool,
}

/// Edits of a bag's bag-info.txt, as bagit-python's `bag.info` and `save()` make them.
#[derive(Debug, Clone, Default)]
pub struct InfoEdits {
    /// Labels set: the lines of each label (compared without case) are replaced by its values
    /// here, in their place (a label not there is added at the end).
    pub set: Vec<(String, String)>,
    /// Labels whose every line is removed (each must be there).
    pub remove: Vec<String>,
}

impl InfoEdits {
    /// No edit.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.remove.is_empty()
    }

    /// `info` with these edits made.
    fn apply(&self, info: &[(String, String)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = info.to_vec();
        let mut labels: Vec<&str> = Vec::new();
        for (k, _) in &self.set {
            if !labels.iter().any(|l| l.eq_ignore_ascii_case(k)) {
                labels.push(k);
            }
        }
        for label in labels {
            let values = self
                .set
                .iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(label))
                .map(|(k, v)| (k.clone(), v.clone()));
            let at = out.iter().position(|(k, _)| k.eq_ignore_ascii_case(label));
            out.retain(|(k, _)| !k.eq_ignore_ascii_case(label));
            let at = at.unwrap_or(out.len()).min(out.len());
            out.splice(at..at, values);
        }
        out.retain(|(k, _)| !self.remove.iter().any(|r| r.eq_ignore_ascii_case(k)));
        out
    }
}

/// The label trawl keeps right itself, which no edit may set or remove.
const OXUM: &str = "Payload-Oxum";

/// Adds payload (and tag) manifests for `new_algs` to the bag at `root`, reading the payload
/// once to compute them and to verify the manifests it has, and makes `edits` to its
/// bag-info.txt (Payload-Oxum kept right: it is checked, and added where it is missing); the
/// tag manifests are written again over every tag file. Changes nothing unless the bag
/// validates; edits that cannot be made (a label to remove that is not there, Payload-Oxum, a
/// bag-info.txt that is not UTF-8) are refused before the payload is read.
pub fn update(
    root: &Path,
    new_algs: &[Algorithm],
    edits: &InfoEdits,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
) -> Result<BagOutcome<Updated>, BagError> {
    refuse_oxum(root, edits)?;
    let (tree, mut report) = (validate::DiskBag::open(root)?, Report::default());
    let bag = validate::load(&tree, &mut report, spools)?;
    refuse_edits(root, edits, &bag)?;
    let on_disk = validate::BagTree::payload(&tree, &mut report, spools)?;
    validate::payload_oxum(&bag, &on_disk, false, &mut report);
    let (all, present, add) = algorithms(&bag.payload_algorithms(), new_algs);
    // The new algorithms' digests of every file, by path, as the check reads them.
    let mut fresh = spools.spool(2);
    validate::check_payload(
        &tree,
        &bag,
        &on_disk,
        false,
        &all,
        cfg,
        progress,
        stop,
        spools,
        &mut report,
        Some(&mut *spool_digests(&add, &mut fresh, spools)),
    )?;
    if stop.is_stopping() {
        return Ok(BagOutcome::stopped(stop));
    }
    // The tag manifests checked too: a bag whose tag files do not match them is not updated
    // (writing them again would hide the difference).
    validate::check_tag_manifests(&tree, &bag, &mut report)?;
    let mut updated = Updated {
        report,
        added: Vec::new(),
        present,
        info_edited: false,
    };
    if !updated.report.errors.is_empty() {
        return Ok(BagOutcome::Finished(updated));
    }
    for a in add.iter().filter(|a| !a.is_bagit_standard()) {
        updated.report.warnings.push(BagFinding::about(
            format!("manifest-{}.txt", a.bagit_name()),
            format!("{a} is trawl's own: other BagIt tools (bagit-python) will not check it"),
        ));
    }
    if add.is_empty() && edits.is_empty() {
        return Ok(BagOutcome::Finished(updated));
    }
    let fresh = Arc::new(fresh.finish().map_err(spools.err())?);
    updated.info_edited = write_update(root, &bag, &on_disk, edits, &add, &fresh)?;
    updated.added = add;
    Ok(BagOutcome::Finished(updated))
}

/// The algorithms of an update: every one the payload is checked with (the bag's, then
/// those asked for), those asked for that the bag has, and those it adds.
fn algorithms(
    existing: &[Algorithm],
    new_algs: &[Algorithm],
) -> (Vec<Algorithm>, Vec<Algorithm>, Vec<Algorithm>) {
    let mut all = existing.to_vec();
    for a in new_algs {
        if !all.contains(a) {
            all.push(*a);
        }
    }
    let (present, add) = new_algs.iter().partition(|a| existing.contains(a));
    (all, present, add)
}

/// What the payload check hands each file to: its digests of `add`, in that order, spooled
/// into `fresh` by its path.
fn spool_digests<'a>(
    add: &'a [Algorithm],
    fresh: &'a mut trawl_spool::Spool,
    spools: &'a Spools,
) -> Box<validate::Sink<'a>> {
    let mut value = Vec::new();
    Box::new(move |path, digests| {
        value.clear();
        for a in add {
            if let Some((_, d)) = digests.iter().find(|(b, _)| b == a) {
                value.extend_from_slice(d);
            }
        }
        fresh.push(path.as_bytes(), &value).map_err(spools.err())
    })
}

/// Edits that set or remove Payload-Oxum, which trawl keeps right itself: refused before
/// anything is read.
fn refuse_oxum(root: &Path, edits: &InfoEdits) -> Result<(), BagError> {
    if let Some(l) = edits
        .set
        .iter()
        .map(|(k, _)| k)
        .chain(&edits.remove)
        .find(|k| k.eq_ignore_ascii_case(OXUM))
    {
        return Err(refused(
            &root.join("bag-info.txt"),
            format!(
                "'{l}' is kept right by trawl from the payload (checked, and added where missing); it is not set or removed by hand; nothing was changed"
            ),
        ));
    }
    Ok(())
}

/// Edits the bag cannot take: any, in a bag whose tag files are not UTF-8; the removal of a
/// label it does not have. Refused before the payload is read.
fn refuse_edits(root: &Path, edits: &InfoEdits, bag: &validate::Bag) -> Result<(), BagError> {
    if edits.is_empty() {
        return Ok(());
    }
    let info_path = root.join("bag-info.txt");
    if !bag.encoding.eq_ignore_ascii_case("UTF-8") {
        return Err(refused(
            &info_path,
            format!(
                "the bag's tag files are in {} (bagit.txt); trawl edits bag-info.txt in UTF-8 bags only; nothing was changed",
                bag.encoding
            ),
        ));
    }
    let absent: Vec<&str> = edits
        .remove
        .iter()
        .filter(|r| !bag.info.iter().any(|(k, _)| k.eq_ignore_ascii_case(r)))
        .map(String::as_str)
        .collect();
    if !absent.is_empty() {
        return Err(refused(
            &info_path,
            format!(
                "no '{}' label to remove; nothing was changed",
                absent.join("', '")
            ),
        ));
    }
    Ok(())
}

/// The update written: payload manifests of `add` from `fresh` (their digests by path), then
/// bag-info.txt with `edits` (when any; Payload-Oxum added where missing) and the tag
/// manifests, of the bag's tag algorithms and `add`, over what they listed and the top's tag
/// files. Whether bag-info.txt was written.
fn write_update(
    root: &Path,
    bag: &validate::Bag,
    on_disk: &validate::Payload,
    edits: &InfoEdits,
    add: &[Algorithm],
    fresh: &Arc<trawl_spool::Sorted>,
) -> Result<bool, BagError> {
    let listing = Listing {
        sorted: fresh,
        layout: add,
        prefix: b"",
        skip: 0,
    };
    let mut tag_algs: Vec<Algorithm> = bag.tag.iter().filter_map(|m| m.algorithm).collect();
    for a in add {
        if !tag_algs.contains(a) {
            tag_algs.push(*a);
        }
    }
    // What the tag manifests list stays listed (tag files below the top among it).
    let listed: Vec<String> = bag
        .tag
        .iter()
        .flat_map(|m| m.entries.iter().map(|e| e.path.clone()))
        .collect();
    let info = (!edits.is_empty()).then(|| {
        let mut info = edits.apply(&bag.info);
        // Validated above: a Payload-Oxum there is right; one missing is added.
        if !info.iter().any(|(k, _)| k.eq_ignore_ascii_case(OXUM)) {
            info.push((
                OXUM.to_string(),
                format!("{}.{}", on_disk.bytes, on_disk.count),
            ));
        }
        info
    });
    write_tag_files(
        root,
        (!add.is_empty()).then_some(&listing),
        add,
        info.as_deref(),
        false,
        &tag_algs,
        &listed,
    )?;
    Ok(info.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A label set replaces its lines in their place (without case), several values give
    /// several lines, a new label goes at the end, a removed one goes entirely.
    #[test]
    fn edits_replace_in_place_and_remove_every_line() {
        let info: Vec<(String, String)> = [
            ("Source-Organization", "Old"),
            ("Contact-Name", "A"),
            ("contact-name", "B"),
            ("External-Description", "d"),
            ("Payload-Oxum", "3.1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let edits = InfoEdits {
            set: vec![
                ("Contact-Name".into(), "C".into()),
                ("Contact-Name".into(), "D".into()),
                ("Contact-Email".into(), "c@example.org".into()),
            ],
            remove: vec!["external-description".into()],
        };
        let got = edits.apply(&info);
        let want: Vec<(String, String)> = [
            ("Source-Organization", "Old"),
            ("Contact-Name", "C"),
            ("Contact-Name", "D"),
            ("Payload-Oxum", "3.1"),
            ("Contact-Email", "c@example.org"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
    }
}
