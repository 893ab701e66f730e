//! Bag validation per RFC 8493, accepting bags of BagIt 0.93 to 1.0.
//!
//! A bag is *valid* when it is complete (every file of every payload manifest present, nothing in
//! `data/` unlisted, every payload manifest listing the same files, Payload-Oxum right) and every
//! digest matches. A holey bag (fetch.txt naming files not present) is reported with what would
//! have to be fetched; trawl never fetches. SHOULD-level findings are warnings and do not make a
//! bag invalid.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use trawl_report::bag::{BagFinding, BagReport, ToFetch};
use trawl_stop::Stop;

use trawl_digest::Algorithm;
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanConfig, ScanError};

use trawl_read::beneath::{self, Refused, Root};

use crate::tagfile::{self, ManifestLine};
use crate::{BagError, io_err};

/// BagIt versions whose bags trawl reads.
pub const SUPPORTED_VERSIONS: [&str; 6] = ["0.93", "0.94", "0.95", "0.96", "0.97", "1.0"];

pub use crate::tagfile::FetchItem;

/// A manifest file as loaded.
#[derive(Debug, Clone)]
pub struct LoadedManifest {
    pub file: String,
    pub algorithm: Option<Algorithm>,
    pub entries: Vec<ManifestLine>,
}

/// A bag's tag files, parsed.
#[derive(Debug, Clone, Default)]
pub struct Bag {
    pub root: PathBuf,
    pub version: String,
    pub encoding: String,
    pub info: Vec<(String, String)>,
    pub payload: Vec<LoadedManifest>,
    pub tag: Vec<LoadedManifest>,
    pub fetch: Vec<FetchItem>,
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
}

/// What validation found.
pub type Report = BagReport;

/// The most a tag file is read into memory, by kind: what is past it is refused with a message
/// naming the limit (a manifest linked to an endless device, a hostile 300 MB bag-info line).
const BAGIT_TXT_MAX: u64 = 64 << 10;
const INFO_MAX: u64 = 16 << 20;
const MANIFEST_MAX: u64 = 1 << 30;

fn cap_for(name: &str) -> u64 {
    match name {
        "bagit.txt" => BAGIT_TXT_MAX,
        "bag-info.txt" | "package-info.txt" => INFO_MAX,
        _ => MANIFEST_MAX,
    }
}

/// Reads the tag file `name` (relative to the bag) as payload files are opened: beneath the bag
/// only (a symbolic link that leaves it is refused), never blocking (a FIFO is refused), a
/// regular file only, and at most `cap_for(name)` bytes. `None`: no such file.
fn read_tag(root: &Path, bag: &Root, name: &str) -> Result<Option<Vec<u8>>, BagError> {
    use std::io::Read;
    let p = root.join(name);
    let refused = |msg: String| BagError::Refused {
        path: p.clone(),
        msg,
    };
    let Some(segs) = beneath::plain_segments(name.as_bytes()) else {
        return Err(refused("names a file outside the bag".into()));
    };
    let file = match beneath::open_beneath(bag, segs) {
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
pub fn load(root: &Path, report: &mut Report) -> Result<Bag, BagError> {
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
    let dir = Root::open(root).map_err(io_err(root))?;
    let Some(raw) = read_tag(root, &dir, "bagit.txt")? else {
        return Err(BagError::Refused {
            path: root.join("bagit.txt"),
            msg: "missing: not a bag".into(),
        });
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
    if bag.encoding.is_empty() {
        bag.encoding = "UTF-8".into();
    }
    let enc = bag.encoding.clone();
    let decode = |name: &str, raw: &[u8], report: &mut Report| -> Option<String> {
        match tagfile::decode(raw, &enc) {
            Ok(t) => Some(t),
            Err(e) => {
                report.errors.push(BagFinding::about(
                    name,
                    format!("{e} (declared encoding {enc})"),
                ));
                None
            }
        }
    };
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
    for info_name in ["bag-info.txt", "package-info.txt"] {
        if let Some(raw) = read_tag(root, &dir, info_name)?
            && let Some(t) = decode(info_name, &raw, report)
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
    // Manifests, sorted by name for stable messages.
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map_err(io_err(root))?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    for name in names {
        let (is_tag, alg_name) = if let Some(a) = name
            .strip_prefix("tagmanifest-")
            .and_then(|r| r.strip_suffix(".txt"))
        {
            (true, a)
        } else if let Some(a) = name
            .strip_prefix("manifest-")
            .and_then(|r| r.strip_suffix(".txt"))
        {
            (false, a)
        } else {
            continue;
        };
        let algorithm: Option<Algorithm> = alg_name.parse().ok();
        if algorithm.is_none() {
            report.warnings.push(BagFinding::about(
                &name,
                format!("algorithm '{alg_name}' is not supported by trawl; not checked"),
            ));
        }
        let raw = read_tag(root, &dir, &name)?.unwrap_or_default();
        let Some(text) = decode(&name, &raw, report) else {
            continue;
        };
        let (entries, errors) = tagfile::parse_manifest(&text);
        for (line, e) in errors {
            report.errors.push(BagFinding::at_line(&name, line, e));
        }
        let mut ok = Vec::with_capacity(entries.len());
        for mut e in entries {
            match tagfile::safe_path(&e.path) {
                Ok(p) => {
                    if let Some(a) = algorithm
                        && (e.digest.len() != a.hex_len()
                            || !e.digest.bytes().all(|b| b.is_ascii_hexdigit()))
                    {
                        report.errors.push(BagFinding::at_line(
                            &name,
                            e.line,
                            format!("'{}' is not a {a} digest", e.digest),
                        ));
                        continue;
                    }
                    if !is_tag && !p.starts_with("data/") {
                        report.errors.push(BagFinding::at_line(
                            &name,
                            e.line,
                            format!("'{p}' is outside the payload directory data/"),
                        ));
                        continue;
                    }
                    e.path = p;
                    ok.push(e);
                }
                Err(m) => report.errors.push(BagFinding::at_line(
                    &name,
                    e.line,
                    format!("unsafe path: {m}"),
                )),
            }
        }
        let m = LoadedManifest {
            file: name.clone(),
            algorithm,
            entries: ok,
        };
        if is_tag {
            bag.tag.push(m)
        } else {
            bag.payload.push(m)
        }
    }
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
    if let Some(raw) = read_tag(root, &dir, "fetch.txt")?
        && let Some(t) = decode("fetch.txt", &raw, report)
    {
        let (items, errors) = tagfile::parse_fetch(&t);
        bag.fetch = items;
        report.errors.extend(
            errors
                .into_iter()
                .map(|(l, e)| BagFinding::at_line("fetch.txt", l, e)),
        );
    }
    Ok(bag)
}

/// Every regular file under `root/data`, as `data/...` strings, with sizes.
pub fn payload_files(root: &Path, report: &mut Report) -> BTreeMap<String, u64> {
    let data = root.join("data");
    let (tx, rx) = crossbeam_channel::bounded(1024);
    let stop = Stop::new();
    let roots = vec![data.clone()];
    let opts = trawl_walk::WalkOptions::default();
    std::thread::scope(|s| {
        s.spawn(|| {
            trawl_walk::walk(&roots, &opts, &tx, &stop, &|_| {});
            drop(tx);
        });
        let mut out = BTreeMap::new();
        for item in rx {
            match item {
                trawl_walk::WalkItem::File(f) => {
                    let rel = f.path.strip_prefix(root).unwrap_or(&f.path);
                    match rel.to_str() {
                        Some(s) => {
                            out.insert(s.to_string(), f.size);
                        }
                        None => report.errors.push(BagFinding::about(
                            rel.display(),
                            "name is not valid UTF-8 and cannot be listed in a manifest",
                        )),
                    }
                }
                trawl_walk::WalkItem::Skipped { path, kind } => report.warnings.push(
                    BagFinding::about(path.display(), format!("{} in payload", kind.describe())),
                ),
                trawl_walk::WalkItem::Error(e) => report.errors.push(BagFinding::from_error(&e)),
            }
        }
        out
    })
}

/// Digests `paths` (relative to `root`) with `algs` in one pass; returns digests by path and
/// counts unreadable files into `report`.
pub fn hash_files(
    root: &Path,
    paths: &[String],
    algs: &[Algorithm],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    report: &mut Report,
) -> HashMap<String, Vec<(Algorithm, Vec<u8>)>> {
    let full: Vec<PathBuf> = paths.iter().map(|p| root.join(p)).collect();
    let back: HashMap<PathBuf, &String> = full.iter().cloned().zip(paths.iter()).collect();
    let mut out = HashMap::new();
    trawl_scan::scan(
        cfg,
        Input::Files(&full),
        &DigestLanes(algs.to_vec()),
        progress,
        stop,
        &mut |ev| match ev {
            Event::File(rec) => {
                report.files_checked += 1;
                report.bytes_checked += rec.size;
                let d = rec.digests().into_iter().collect();
                out.insert(back[&rec.path].clone(), d);
            }
            Event::Failed(ScanError::Read(e)) => {
                report.unreadable += 1;
                report.errors.push(BagFinding::from_error(&e));
            }
            Event::Failed(e) => report.errors.push(BagFinding::from_error(&e)),
            Event::Skipped { path, kind } => report.errors.push(BagFinding::about(
                path.display(),
                kind.describe().to_string(),
            )),
        },
    );
    out
}

/// How `bagit.txt` departs from RFC 8493's form: exactly `BagIt-Version: M.N` then
/// `Tag-File-Character-Encoding: ENCODING`, one space after each colon and none before it, no
/// other line (line ends LF, CRLF or CR; a final line end is optional).
pub fn declaration_deviations(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text
        .split_inclusive(['\n', '\r'])
        .map(|l| l.trim_end_matches(['\n', '\r']))
        .filter(|l| !l.is_empty())
        .collect();
    let want = ["BagIt-Version", "Tag-File-Character-Encoding"];
    for (i, l) in lines.iter().enumerate() {
        let n = i + 1;
        let Some(expected) = want.get(i) else {
            out.push((n, format!("'{l}': bagit.txt must hold exactly two lines")));
            continue;
        };
        match l.split_once(':') {
            None => out.push((n, format!("'{l}': expected '{expected}: VALUE'"))),
            Some((label, value)) => {
                if label != *expected {
                    let found = label.trim();
                    if found == *expected {
                        out.push((n, format!("'{l}': no space may come before the colon")));
                    } else {
                        out.push((n, format!("'{found}' where '{expected}' must be")));
                    }
                }
                if !value.starts_with(' ') || value.starts_with("  ") || value.trim().is_empty() {
                    out.push((
                        n,
                        format!("'{l}': exactly one space must follow the colon, then the value"),
                    ));
                } else if i == 0 && !is_version(value.trim()) {
                    out.push((n, format!("'{}': the version must be M.N", value.trim())));
                }
            }
        }
    }
    if lines.len() < 2 {
        out.push((
            lines.len() + 1,
            "bagit.txt must hold BagIt-Version then Tag-File-Character-Encoding".into(),
        ));
    }
    out
}

fn is_version(v: &str) -> bool {
    v.split_once('.').is_some_and(|(m, n)| {
        !m.is_empty()
            && !n.is_empty()
            && m.bytes().all(|b| b.is_ascii_digit())
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// Validates the bag at `root`. `fast`: everything but the payload's digests (structure, the
/// file list against every manifest and fetch.txt, Payload-Oxum): no payload byte is read.
pub fn validate(
    root: &Path,
    fast: bool,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
) -> Result<Report, BagError> {
    let mut report = Report {
        fast,
        ..Report::default()
    };
    let bag = load(root, &mut report)?;
    let on_disk = payload_files(root, &mut report);

    // Payload-Oxum: octets.streams.
    match bag.info_value("Payload-Oxum") {
        Some(ox) => match ox
            .split_once('.')
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        {
            Some((bytes, count)) => {
                let (b, c) = (on_disk.values().sum::<u64>(), on_disk.len() as u64);
                // A holey bag's Oxum counts files not yet fetched.
                if (b, c) != (bytes, count) && bag.fetch.is_empty() {
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
    // Completeness: per manifest listings, duplicates, agreement between manifests.
    let mut listed: BTreeMap<String, Vec<(usize, &ManifestLine)>> = BTreeMap::new();
    for (mi, m) in bag.payload.iter().enumerate() {
        let mut seen: HashMap<&str, &ManifestLine> = HashMap::new();
        for e in &m.entries {
            if let Some(prev) = seen.get(e.path.as_str()) {
                if prev.digest != e.digest {
                    report.errors.push(BagFinding::about(
                        &m.file,
                        format!(
                            "'{}' is listed twice with different digests (lines {} and {})",
                            e.path, prev.line, e.line
                        ),
                    ));
                } else {
                    report.warnings.push(BagFinding::about(
                        &m.file,
                        format!(
                            "'{}' is listed twice (lines {} and {})",
                            e.path, prev.line, e.line
                        ),
                    ));
                }
                continue;
            }
            seen.insert(&e.path, e);
            listed.entry(e.path.clone()).or_default().push((mi, e));
        }
    }
    for (path, ms) in &listed {
        if ms.len() != bag.payload.len() {
            let missing_from: Vec<&str> = bag
                .payload
                .iter()
                .enumerate()
                .filter(|(i, _)| !ms.iter().any(|(mi, _)| mi == i))
                .map(|(_, m)| m.file.as_str())
                .collect();
            report.errors.push(BagFinding::about(
                path,
                format!(
                    "listed in some payload manifests but not in {}",
                    missing_from.join(", ")
                ),
            ));
        }
    }
    // By path, for the lookups below: one pass, not one search per listed file.
    let fetch_by_path: HashMap<&str, &FetchItem> =
        bag.fetch.iter().map(|f| (f.path.as_str(), f)).collect();
    for f in &bag.fetch {
        if !listed.contains_key(&f.path) {
            report.errors.push(BagFinding::about(
                "fetch.txt",
                format!("'{}' is in no payload manifest", f.path),
            ));
        }
    }
    for path in on_disk.keys() {
        if !listed.contains_key(path) {
            report.errors.push(BagFinding::about(
                path,
                "present in the payload but in no manifest",
            ));
        }
    }
    for path in listed.keys() {
        if !on_disk.contains_key(path) {
            if let Some(f) = fetch_by_path.get(path.as_str()) {
                report.to_fetch.push(ToFetch {
                    url: f.url.clone(),
                    length: f.length,
                    path: f.path.clone(),
                });
            } else {
                report.errors.push(BagFinding::about(
                    path,
                    "listed in the manifests but missing",
                ));
            }
        }
    }

    if fast {
        return Ok(report);
    }

    // Digests: every present listed file, every algorithm, one read.
    let algs = bag.payload_algorithms();
    let present: Vec<String> = listed
        .keys()
        .filter(|p| on_disk.contains_key(*p))
        .cloned()
        .collect();
    let got = hash_files(root, &present, &algs, cfg, progress, stop, &mut report);
    for (path, ms) in &listed {
        let Some(d) = got.get(path) else { continue };
        for (mi, e) in ms {
            let m = &bag.payload[*mi];
            let Some(alg) = m.algorithm else { continue };
            let actual = d
                .iter()
                .find(|(a, _)| *a == alg)
                .map(|(_, v)| hex::encode(v))
                .unwrap_or_default();
            if actual != e.digest {
                report.errors.push(BagFinding::about(
                    path,
                    format!(
                        "{alg} mismatch ({} line {}): manifest has {}, file has {actual}",
                        m.file, e.line, e.digest
                    ),
                ));
            }
        }
    }

    // Tag manifests.
    let tag_dir = Root::open(root).map_err(io_err(root))?;
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
            match read_tag(root, &tag_dir, &e.path) {
                Ok(Some(bytes)) => {
                    let actual = hex::encode(trawl_digest::digest(alg, &bytes));
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
    if !bag.tag.is_empty() {
        for name in ["bagit.txt", "bag-info.txt", "fetch.txt"]
            .into_iter()
            .map(String::from)
            .chain(bag.payload.iter().map(|m| m.file.clone()))
        {
            if root.join(&name).exists() && !tag_listed.contains(&name) {
                report.warnings.push(BagFinding::about(
                    &name,
                    "not listed in the tag manifests (it SHOULD be)",
                ));
            }
        }
    }
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
