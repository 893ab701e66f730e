//! A bag's tag files loaded and checked: bagit.txt, bag-info.txt, fetch.txt, the manifests
//! (read through the bag's [`BagTree`], capped by kind), into a [`Bag`].

use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_report::BagFinding;
use trawl_spool::{Sorted, Spool};

use crate::BagError;
use crate::payload::Spools;
use crate::tagfile::{self, ManifestLine};

use super::*;

/// A manifest file as loaded.
#[derive(Debug, Clone)]
pub struct LoadedManifest {
    pub file: String,
    pub algorithm: Option<Algorithm>,
    /// A tag manifest's entries. A payload manifest's are in [`Bag::listed`], marked with
    /// `slot`; here only how many there are.
    pub entries: Vec<ManifestLine>,
    pub slot: u32,
    pub count: u64,
}

/// A bag's tag files, parsed.
#[derive(Default)]
pub struct Bag {
    pub version: String,
    pub encoding: String,
    pub info: Vec<(String, String)>,
    pub payload: Vec<LoadedManifest>,
    pub tag: Vec<LoadedManifest>,
    /// fetch.txt's items by path: the length (8 bytes, big-endian; `u64::MAX` for `-`) and the
    /// URL.
    pub fetch: Option<Arc<Sorted>>,
    /// How many items fetch.txt lists.
    pub fetch_count: u64,
    /// Every payload manifest's entries by path (then manifest, then line): key the path,
    /// value the manifest's slot (4 bytes), the line (8) and the digest as written.
    pub listed: Option<Arc<Sorted>>,
}

impl Bag {
    pub fn info_value(&self, label: &str) -> Option<&str> {
        self.info
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(label))
            .map(|(_, v)| v.as_str())
    }

    pub fn payload_algorithms(&self) -> Vec<Algorithm> {
        self.payload.iter().filter_map(|m| m.algorithm).collect()
    }

    /// The payload manifest of a slot (None: a manifest that was rejected whole).
    pub(crate) fn manifest_of(&self, slot: u32) -> Option<(usize, &LoadedManifest)> {
        self.payload
            .iter()
            .enumerate()
            .find(|(_, m)| m.slot == slot)
    }
}

pub(crate) fn listed_value(slot: u32, line: usize, digest: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + digest.len());
    v.extend_from_slice(&slot.to_be_bytes());
    v.extend_from_slice(&(line as u64).to_be_bytes());
    v.extend_from_slice(digest.as_bytes());
    v
}

pub(crate) fn decode_listed(v: &[u8]) -> Option<(u32, usize, String)> {
    let slot = u32::from_be_bytes(v.get(..4)?.try_into().ok()?);
    let line = u64::from_be_bytes(v.get(4..12)?.try_into().ok()?) as usize;
    Some((slot, line, String::from_utf8_lossy(&v[12..]).into_owned()))
}

/// Loads and checks the tag files. Problems that do not stop loading go into `report`.
pub fn load(tree: &dyn BagTree, report: &mut Report, spools: &Spools) -> Result<Bag, BagError> {
    let mut bag = Bag::default();
    declaration(tree, &mut bag, report)?;
    if bag.encoding.is_empty() {
        bag.encoding = "UTF-8".into();
    }
    tree.payload_directory(report);
    info(tree, &mut bag, report)?;
    manifests(tree, &mut bag, report, spools)?;
    payload_manifest_found(&mut bag, report);
    fetch(tree, &mut bag, report, spools)?;
    tree.odd_tag_entries(report)?;
    Ok(bag)
}

/// A tag file's text in the bag's declared encoding; an error in `report` if it is not.
fn decode(name: &str, raw: &[u8], enc: &str, report: &mut Report) -> Option<String> {
    match tagfile::decode(raw, enc) {
        Ok(t) => Some(t),
        Err(e) => {
            report.errors.push(BagFinding::about(
                name,
                format!("{e} (declared encoding {enc})"),
            ));
            None
        }
    }
}

/// No `bagit.txt`: not a bag (and, where a creation in place was cut short, the way back).
fn no_declaration(tree: &dyn BagTree) -> BagError {
    let root = tree.root();
    BagError::Refused {
        path: root.join("bagit.txt"),
        msg: if tree.interrupted_creation() {
            format!(
                "missing: not a bag, but a `bag create` here was interrupted ({} is its journal): run `trawl bag recover {}` to put the directory back",
                crate::create::JOURNAL,
                root.display()
            )
        } else {
            "missing: not a bag".into()
        },
    }
}

/// `bagit.txt`: the version and encoding, in RFC 8493's form.
fn declaration(tree: &dyn BagTree, bag: &mut Bag, report: &mut Report) -> Result<(), BagError> {
    let root = tree.root();
    let Some(raw) = read_tag(tree, "bagit.txt")? else {
        return Err(no_declaration(tree));
    };
    if raw.starts_with(b"\xef\xbb\xbf") {
        report.errors.push(BagFinding::about(
            "bagit.txt",
            "begins with a byte-order mark, which RFC 8493 forbids",
        ));
    }
    let text = tagfile::decode(&raw, "UTF-8").map_err(|m| BagError::Refused {
        path: root.join("bagit.txt"),
        msg: m,
    })?;
    let labels = tagfile::parse_labels(&text).map_err(|m| BagError::Refused {
        path: root.join("bagit.txt"),
        msg: m,
    })?;
    let get = |k: &str| labels.iter().find(|(l, _)| l == k).map(|(_, v)| v.clone());
    bag.version = get("BagIt-Version").unwrap_or_default();
    bag.encoding = get("Tag-File-Character-Encoding").unwrap_or_default();
    report.version = bag.version.clone();
    if bag.version.is_empty() || bag.encoding.is_empty() {
        report.errors.push(BagFinding::about(
            "bagit.txt",
            "must declare BagIt-Version and Tag-File-Character-Encoding",
        ));
    }
    if !bag.version.is_empty() && !SUPPORTED_VERSIONS.contains(&bag.version.as_str()) {
        report.errors.push(BagFinding::about(
            "bagit.txt",
            format!(
                "unsupported BagIt-Version '{}' (supported: 0.93 to 1.0)",
                bag.version
            ),
        ));
    }
    // RFC 8493 2.1.1: exactly these two lines, in this order, in this form. A MUST for 1.0
    // bags (an error); earlier drafts were read leniently by the tools of their day (a
    // warning). See docs/commands/bag.md for the table of rules.
    for (line, msg) in declaration_deviations(&text) {
        let f = BagFinding::at_line("bagit.txt", line, msg);
        if bag.version == "1.0" {
            report.errors.push(f);
        } else {
            report.warnings.push(f);
        }
    }
    Ok(())
}

/// `bag-info.txt` (or the older `package-info.txt`), if there is one.
fn info(tree: &dyn BagTree, bag: &mut Bag, report: &mut Report) -> Result<(), BagError> {
    let enc = bag.encoding.clone();
    for info_name in ["bag-info.txt", "package-info.txt"] {
        if let Some(raw) = read_tag(tree, info_name)?
            && let Some(t) = decode(info_name, &raw, &enc, report)
        {
            match tagfile::parse_labels(&t) {
                Ok(l) => bag.info = l,
                Err(e) => report
                    .errors
                    .push(BagFinding::about(info_name, e.to_string())),
            }
            break;
        }
    }
    Ok(())
}

/// Whether `name` is a tag manifest (`tagmanifest-ALG.txt`) or a payload manifest
/// (`manifest-ALG.txt`), and its algorithm's name; None for any other file.
fn manifest_kind(name: &str) -> Option<(bool, &str)> {
    let alg = |prefix: &str| name.strip_prefix(prefix)?.strip_suffix(".txt");
    if let Some(a) = alg("tagmanifest-") {
        Some((true, a))
    } else {
        alg("manifest-").map(|a| (false, a))
    }
}

/// The algorithm a manifest `name` is of (`alg_name`); one trawl does not support is said
/// (a warning), and the manifest is not checked.
fn algorithm_of(name: &str, alg_name: &str, report: &mut Report) -> Option<Algorithm> {
    let algorithm = alg_name.parse().ok();
    if algorithm.is_none() {
        report.warnings.push(BagFinding::about(
            name,
            format!("algorithm '{alg_name}' is not supported by trawl; not checked"),
        ));
    }
    algorithm
}

/// A tag manifest, read whole (it lists a handful of tag files) into `m`: its entries checked,
/// each problem in `report`. False when its text cannot be decoded in `enc`.
fn read_tag_manifest(
    tree: &dyn BagTree,
    enc: &str,
    m: &mut LoadedManifest,
    report: &mut Report,
) -> Result<bool, BagError> {
    let name = m.file.clone();
    let raw = read_tag(tree, &name)?.unwrap_or_default();
    let Some(text) = decode(&name, &raw, enc, report) else {
        return Ok(false);
    };
    let (entries, errors) = tagfile::parse_manifest(&text);
    for (line, e) in errors {
        report.errors.push(BagFinding::at_line(&name, line, e));
    }
    for e in entries {
        if let Some(e) = check_entry(&name, m.algorithm, true, e, report) {
            m.entries.push(e);
        }
    }
    m.count = m.entries.len() as u64;
    Ok(true)
}

/// The payload and tag manifests: tag manifests read whole, payload manifests into one spool
/// of listed entries.
fn manifests(
    tree: &dyn BagTree,
    bag: &mut Bag,
    report: &mut Report,
    spools: &Spools,
) -> Result<(), BagError> {
    let enc = bag.encoding.clone();
    let mut listed: Option<Spool> = None;
    let mut rejected = 0u32;
    for name in tree.names_at_top()? {
        let Some((is_tag, alg_name)) = manifest_kind(&name) else {
            continue;
        };
        let algorithm = algorithm_of(&name, alg_name, report);
        let slot = bag.payload.len() as u32 + bag.tag.len() as u32 + rejected;
        let mut m = LoadedManifest {
            file: name.clone(),
            algorithm,
            entries: Vec::new(),
            slot,
            count: 0,
        };
        let ok = if is_tag {
            read_tag_manifest(tree, &enc, &mut m, report)?
        } else {
            let spool = listed.get_or_insert_with(|| spools.spool(2));
            let mut sink = ListedSink {
                spool,
                spools,
                count: 0,
            };
            let ok = read_payload_manifest(tree, &name, &enc, algorithm, slot, &mut sink, report)?;
            m.count = sink.count;
            ok
        };
        if !ok {
            // Its entries (some may be spooled) belong to no manifest of the bag.
            rejected += 1;
            continue;
        }
        if is_tag {
            bag.tag.push(m)
        } else {
            bag.payload.push(m)
        }
    }
    if let Some(l) = listed {
        bag.listed = Some(Arc::new(l.finish().map_err(spools.err())?));
    }
    Ok(())
}

/// At least one payload manifest; whether trawl can check any.
fn payload_manifest_found(bag: &mut Bag, report: &mut Report) {
    if bag.payload.is_empty() {
        report.errors.push(BagFinding::bag(
            "no payload manifest (manifest-ALGORITHM.txt): RFC 8493 requires one",
        ));
    } else if bag.payload.iter().all(|m| m.algorithm.is_none()) {
        // Not invalid: valid for a tool that has the algorithm. Said apart, so that the caller
        // can tell "cannot check" from both "valid" and "invalid".
        report.cannot_check = bag
            .payload
            .iter()
            .map(|m| {
                m.file
                    .trim_start_matches("manifest-")
                    .trim_end_matches(".txt")
                    .to_string()
            })
            .collect();
    }
}

/// `fetch.txt`: in pieces into a spool by path (a holey bag may list millions of files), its
/// problem lines capped.
fn fetch(
    tree: &dyn BagTree,
    bag: &mut Bag,
    report: &mut Report,
    spools: &Spools,
) -> Result<(), BagError> {
    let enc = bag.encoding.clone();
    let mut fetch = spools.spool(2);
    let mut problems = LineProblems::new("fetch.txt");
    let mut value = Vec::new();
    let mut take = |text: &str, base: usize, report: &mut Report| -> Result<(), BagError> {
        let (items, errors) = tagfile::parse_fetch(text);
        for (l, e) in errors {
            problems.push(report, base + l, e);
        }
        for item in items {
            value.clear();
            value.extend_from_slice(&item.length.unwrap_or(u64::MAX).to_be_bytes());
            value.extend_from_slice(item.url.as_bytes());
            fetch
                .push(item.path.as_bytes(), &value)
                .map_err(spools.err())?;
            bag.fetch_count += 1;
        }
        Ok(())
    };
    let read = if is_utf8(&enc) {
        read_utf8_pieces(tree, "fetch.txt", &mut |t, base| take(t, base, report))?
    } else {
        match read_tag(tree, "fetch.txt")? {
            Some(raw) => tagfile::decode(&raw, &enc)
                .and_then(|t| take(&t, 0, report).map_err(|e| e.to_string())),
            None => Ok(()),
        }
    };
    if let Err(e) = read {
        report.errors.push(BagFinding::about(
            "fetch.txt",
            format!("{e} (declared encoding {enc})"),
        ));
    }
    problems.finish(report);
    if bag.fetch_count > 0 {
        bag.fetch = Some(Arc::new(fetch.finish().map_err(spools.err())?));
    }
    Ok(())
}
