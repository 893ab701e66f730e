//! A bag's tag files loaded and checked: bagit.txt, bag-info.txt, fetch.txt, the manifests
//! (opened beneath the bag, capped by kind), into a [`Bag`].

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_read::{Refused, RootDir, open_beneath, plain_segments};
use trawl_report::BagFinding;
use trawl_spool::{Sorted, Spool};

use crate::payload::Spools;
use crate::tagfile::{self, ManifestLine};
use crate::{BagError, io_err};

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
    pub root: PathBuf,
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

/// The most a tag file is read into memory, by kind: what is past it is refused with a message
/// naming the limit (a manifest linked to an endless device, a hostile 300 MB bag-info line).
pub(crate) const BAGIT_TXT_MAX: u64 = 64 << 10;
pub(crate) const INFO_MAX: u64 = 1 << 20;
pub(crate) const MANIFEST_MAX: u64 = 1 << 30;

pub(crate) fn cap_for(name: &str) -> u64 {
    match name {
        "bagit.txt" => BAGIT_TXT_MAX,
        "bag-info.txt" | "package-info.txt" => INFO_MAX,
        _ => MANIFEST_MAX,
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

/// Reads the tag file `name` whole, as [`open_tag`] opens it, at most `cap_for(name)` bytes.
pub(crate) fn read_tag(
    root: &Path,
    bag: &RootDir,
    name: &str,
) -> Result<Option<Vec<u8>>, BagError> {
    let p = root.join(name);
    let refused = |msg: String| BagError::Refused {
        path: p.clone(),
        msg,
    };
    let Some(file) = open_tag(root, bag, name)? else {
        return Ok(None);
    };
    let cap = cap_for(name);
    let mut out = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(io_err(&p))?;
    if out.len() as u64 > cap {
        let limit = if cap >= 1 << 20 {
            format!("{} MiB", cap >> 20)
        } else {
            format!("{} KiB", cap >> 10)
        };
        return Err(refused(format!(
            "larger than the {limit} trawl reads for a tag file of this kind; not read"
        )));
    }
    Ok(Some(out))
}

/// Loads and checks the tag files. Problems that do not stop loading go into `report`.
pub fn load(root: &Path, report: &mut Report, spools: &Spools) -> Result<Bag, BagError> {
    let mut bag = Bag {
        root: root.to_path_buf(),
        ..Default::default()
    };
    let md = std::fs::metadata(root).map_err(io_err(root))?;
    if !md.is_dir() {
        return Err(BagError::Refused {
            path: root.to_path_buf(),
            msg: "not a directory".into(),
        });
    }
    let dir = RootDir::open(root).map_err(io_err(root))?;
    declaration(root, &dir, &mut bag, report)?;
    if bag.encoding.is_empty() {
        bag.encoding = "UTF-8".into();
    }
    payload_directory(root, report);
    info(root, &dir, &mut bag, report)?;
    manifests(root, &dir, &mut bag, report, spools)?;
    payload_manifest_found(&mut bag, report);
    fetch(root, &dir, &mut bag, report, spools)?;
    special_tag_files(root, Path::new(""), report)?;
    Ok(bag)
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
fn no_declaration(root: &Path) -> BagError {
    // A creation in place that was cut short leaves its journal: the way back is named.
    let interrupted = std::fs::symlink_metadata(root.join(crate::create::JOURNAL)).is_ok();
    BagError::Refused {
        path: root.join("bagit.txt"),
        msg: if interrupted {
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
fn declaration(
    root: &Path,
    dir: &RootDir,
    bag: &mut Bag,
    report: &mut Report,
) -> Result<(), BagError> {
    let Some(raw) = read_tag(root, dir, "bagit.txt")? else {
        return Err(no_declaration(root));
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

/// `bag-info.txt` (or the older `package-info.txt`), if there is one.
fn info(root: &Path, dir: &RootDir, bag: &mut Bag, report: &mut Report) -> Result<(), BagError> {
    let enc = bag.encoding.clone();
    for info_name in ["bag-info.txt", "package-info.txt"] {
        if let Some(raw) = read_tag(root, dir, info_name)?
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
    root: &Path,
    dir: &RootDir,
    enc: &str,
    m: &mut LoadedManifest,
    report: &mut Report,
) -> Result<bool, BagError> {
    let name = m.file.clone();
    let raw = read_tag(root, dir, &name)?.unwrap_or_default();
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
    root: &Path,
    dir: &RootDir,
    bag: &mut Bag,
    report: &mut Report,
    spools: &Spools,
) -> Result<(), BagError> {
    let enc = bag.encoding.clone();
    let mut listed: Option<Spool> = None;
    let mut rejected = 0u32;
    for name in names_at_top(root)? {
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
            read_tag_manifest(root, dir, &enc, &mut m, report)?
        } else {
            let spool = listed.get_or_insert_with(|| spools.spool(2));
            let mut sink = ListedSink {
                spool,
                spools,
                count: 0,
            };
            let ok =
                read_payload_manifest(root, dir, &name, &enc, algorithm, slot, &mut sink, report)?;
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
    root: &Path,
    dir: &RootDir,
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
        read_utf8_pieces(root, dir, "fetch.txt", &mut |t, base| take(t, base, report))?
    } else {
        match read_tag(root, dir, "fetch.txt")? {
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
