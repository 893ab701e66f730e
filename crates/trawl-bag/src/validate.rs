//! Bag validation per RFC 8493, accepting bags of BagIt 0.93 to 1.0.
//!
//! A bag is *valid* when it is complete (every file of every payload manifest present, nothing in
//! `data/` unlisted, every payload manifest listing the same files, Payload-Oxum right) and every
//! digest matches. A holey bag (fetch.txt naming files not present) is reported with what would
//! have to be fetched; trawl never fetches. SHOULD-level findings are warnings and do not make a
//! bag invalid.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_read::beneath::{self, Refused, Root};
use trawl_report::bag::{BagFinding, BagReport, ToFetch};
use trawl_scan::{Progress, ScanConfig};
use trawl_spool::{Sorted, Spool};
use trawl_stop::Stop;

use crate::payload::{Hashed, Spools, digest_reader, hash_stream};
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
    fn manifest_of(&self, slot: u32) -> Option<(usize, &LoadedManifest)> {
        self.payload
            .iter()
            .enumerate()
            .find(|(_, m)| m.slot == slot)
    }
}

fn listed_value(slot: u32, line: usize, digest: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(12 + digest.len());
    v.extend_from_slice(&slot.to_be_bytes());
    v.extend_from_slice(&(line as u64).to_be_bytes());
    v.extend_from_slice(digest.as_bytes());
    v
}

fn decode_listed(v: &[u8]) -> Option<(u32, usize, String)> {
    let slot = u32::from_be_bytes(v.get(..4)?.try_into().ok()?);
    let line = u64::from_be_bytes(v.get(4..12)?.try_into().ok()?) as usize;
    Some((slot, line, String::from_utf8_lossy(&v[12..]).into_owned()))
}

/// What validation found.
pub type Report = BagReport;

/// The most a tag file is read into memory, by kind: what is past it is refused with a message
/// naming the limit (a manifest linked to an endless device, a hostile 300 MB bag-info line).
const BAGIT_TXT_MAX: u64 = 64 << 10;
const INFO_MAX: u64 = 1 << 20;
const MANIFEST_MAX: u64 = 1 << 30;

fn cap_for(name: &str) -> u64 {
    match name {
        "bagit.txt" => BAGIT_TXT_MAX,
        "bag-info.txt" | "package-info.txt" => INFO_MAX,
        _ => MANIFEST_MAX,
    }
}

/// Opens the tag file `name` (relative to the bag) as payload files are opened: beneath the bag
/// only (a symbolic link that leaves it is refused), never blocking (a FIFO is refused), a
/// regular file only. `None`: no such file.
fn open_tag(root: &Path, bag: &Root, name: &str) -> Result<Option<std::fs::File>, BagError> {
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
    Ok(Some(file))
}

/// Reads the tag file `name` whole, as [`open_tag`] opens it, at most `cap_for(name)` bytes.
fn read_tag(root: &Path, bag: &Root, name: &str) -> Result<Option<Vec<u8>>, BagError> {
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
    let mut listed: Option<Spool> = None;
    let mut rejected = 0u32;
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
        let slot = bag.payload.len() as u32 + bag.tag.len() as u32 + rejected;
        let mut m = LoadedManifest {
            file: name.clone(),
            algorithm,
            entries: Vec::new(),
            slot,
            count: 0,
        };
        let ok = if is_tag {
            // Tag manifests list a handful of tag files: read whole.
            let raw = read_tag(root, &dir, &name)?.unwrap_or_default();
            match decode(&name, &raw, report) {
                Some(text) => {
                    let (entries, errors) = tagfile::parse_manifest(&text);
                    for (line, e) in errors {
                        report.errors.push(BagFinding::at_line(&name, line, e));
                    }
                    for e in entries {
                        if let Some(e) = check_entry(&name, algorithm, true, e, report) {
                            m.entries.push(e);
                        }
                    }
                    m.count = m.entries.len() as u64;
                    true
                }
                None => false,
            }
        } else {
            let spool = listed.get_or_insert_with(|| spools.spool(2));
            let mut sink = ListedSink {
                spool,
                spools,
                count: 0,
            };
            let ok =
                read_payload_manifest(root, &dir, &name, &enc, algorithm, slot, &mut sink, report)?;
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
    // fetch.txt: in pieces into a spool by path (a holey bag may list millions of files), its
    // problem lines capped.
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
        read_utf8_pieces(root, &dir, "fetch.txt", &mut |t, base| {
            take(t, base, report)
        })?
    } else {
        match read_tag(root, &dir, "fetch.txt")? {
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
    Ok(bag)
}

/// A manifest entry as the bag may hold it: a safe path, a digest of the algorithm's form, a
/// payload manifest's path under `data/`; otherwise an error in `report` and None.
fn check_entry(
    name: &str,
    algorithm: Option<Algorithm>,
    is_tag: bool,
    mut e: ManifestLine,
    report: &mut Report,
) -> Option<ManifestLine> {
    match tagfile::safe_path(&e.path) {
        Ok(p) => {
            if let Some(a) = algorithm
                && (e.digest.len() != a.hex_len()
                    || !e.digest.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                report.errors.push(BagFinding::at_line(
                    name,
                    e.line,
                    format!("'{}' is not a {a} digest", e.digest),
                ));
                return None;
            }
            if !is_tag && !p.starts_with("data/") {
                report.errors.push(BagFinding::at_line(
                    name,
                    e.line,
                    format!("'{p}' is outside the payload directory data/"),
                ));
                return None;
            }
            e.path = p;
            Some(e)
        }
        Err(m) => {
            report.errors.push(BagFinding::at_line(
                name,
                e.line,
                format!("unsafe path: {m}"),
            ));
            None
        }
    }
}

/// Where a payload manifest's entries go.
struct ListedSink<'a> {
    spool: &'a mut Spool,
    spools: &'a Spools,
    count: u64,
}

impl ListedSink<'_> {
    fn push(&mut self, slot: u32, e: &ManifestLine) -> Result<(), BagError> {
        self.spool
            .push(e.path.as_bytes(), &listed_value(slot, e.line, &e.digest))
            .map_err(self.spools.err())?;
        self.count += 1;
        Ok(())
    }
}

/// How much of a UTF-8 manifest is decoded and parsed at a time.
const PIECE: usize = 1 << 20;

/// Where a piece of manifest text may end: after its last line break (a CR only where the byte
/// after it is known, so that a CRLF is never cut in two).
fn piece_end(buf: &[u8]) -> Option<usize> {
    if let Some(i) = buf.iter().rposition(|&b| b == b'\n') {
        return Some(i + 1);
    }
    buf[..buf.len().saturating_sub(1)]
        .iter()
        .rposition(|&b| b == b'\r')
        .map(|i| i + 1)
}

/// Parses a payload manifest into `sink`, with its entries checked. A UTF-8 manifest (what RFC
/// 8493 bags declare) is read in pieces of [`PIECE`] bytes at line ends, so its size is not
/// bounded by memory; one in another encoding is read whole, within the tag-file cap. False: the
/// manifest is not valid in its encoding and is not part of the bag (said in `report`).
#[allow(clippy::too_many_arguments)]
fn read_payload_manifest(
    root: &Path,
    dir: &Root,
    name: &str,
    enc: &str,
    algorithm: Option<Algorithm>,
    slot: u32,
    sink: &mut ListedSink<'_>,
    report: &mut Report,
) -> Result<bool, BagError> {
    let bad = |e: String, report: &mut Report| {
        report.errors.push(BagFinding::about(
            name,
            format!("{e} (declared encoding {enc})"),
        ));
        Ok(false)
    };
    let mut problems = LineProblems::new(name);
    let mut take = |text: &str, base: usize, report: &mut Report| -> Result<(), BagError> {
        let (entries, errors) = tagfile::parse_manifest(text);
        for (line, e) in errors {
            problems.push(report, base + line, e);
        }
        for mut e in entries {
            e.line += base;
            if let Some(e) = check_entry(name, algorithm, false, e, report) {
                sink.push(slot, &e)?;
            }
        }
        Ok(())
    };
    let read = if !is_utf8(enc) {
        let raw = read_tag(root, dir, name)?.unwrap_or_default();
        match tagfile::decode(&raw, enc) {
            Ok(text) => {
                take(&text, 0, report)?;
                Ok(())
            }
            Err(e) => Err(e),
        }
    } else {
        read_utf8_pieces(root, dir, name, &mut |t, base| take(t, base, report))?
    };
    problems.finish(report);
    match read {
        Ok(()) => Ok(true),
        Err(e) => bad(e, report),
    }
}

fn is_utf8(enc: &str) -> bool {
    matches!(enc.trim().to_ascii_lowercase().as_str(), "utf-8" | "utf8")
}

/// Problem lines shown per tag file; the rest are counted in one finding.
const LINE_PROBLEMS_SHOWN: usize = 100;

/// The problem lines of one tag file: the first [`LINE_PROBLEMS_SHOWN`] go into the report, the
/// rest are counted, so that a file of millions of bad lines costs one line of output each
/// for a hundred of them and a count.
struct LineProblems {
    name: String,
    shown: usize,
    more: u64,
}

impl LineProblems {
    fn new(name: &str) -> LineProblems {
        LineProblems {
            name: name.to_string(),
            shown: 0,
            more: 0,
        }
    }

    fn push(&mut self, report: &mut Report, line: usize, msg: String) {
        let name = self.name.clone();
        self.add(&mut report.errors, || BagFinding::at_line(name, line, msg));
    }

    /// A fetch.txt item whose path no payload manifest lists.
    fn not_listed(&mut self, errors: &mut Vec<BagFinding>, path: &[u8]) {
        let name = self.name.clone();
        self.add(errors, || {
            BagFinding::about(
                name,
                format!(
                    "'{}' is in no payload manifest",
                    String::from_utf8_lossy(path)
                ),
            )
        });
    }

    fn add(&mut self, errors: &mut Vec<BagFinding>, finding: impl FnOnce() -> BagFinding) {
        if self.shown < LINE_PROBLEMS_SHOWN {
            self.shown += 1;
            errors.push(finding());
        } else {
            self.more += 1;
        }
    }

    fn finish(self, report: &mut Report) {
        self.finish_into(&mut report.errors);
    }

    fn finish_into(self, errors: &mut Vec<BagFinding>) {
        if self.more > 0 {
            errors.push(BagFinding::about(
                &self.name,
                format!(
                    "{} more problem lines like those above (the first {LINE_PROBLEMS_SHOWN} are shown)",
                    self.more
                ),
            ));
        }
    }
}

/// Reads the UTF-8 tag file `name` in pieces of [`PIECE`] bytes cut at line ends, handing each
/// piece's text to `take` with the number of lines before it. `Ok(Err(why))`: the file is not
/// valid UTF-8, or holds a line over 4 pieces. No file: nothing is read.
fn read_utf8_pieces(
    root: &Path,
    dir: &Root,
    name: &str,
    take: &mut dyn FnMut(&str, usize) -> Result<(), BagError>,
) -> Result<Result<(), String>, BagError> {
    let p = root.join(name);
    let Some(mut file) = open_tag(root, dir, name)? else {
        return Ok(Ok(()));
    };
    let mut buf: Vec<u8> = Vec::with_capacity(PIECE);
    let mut base = 0usize;
    let mut first = true;
    let mut eof = false;
    loop {
        if !eof {
            let old = buf.len();
            buf.resize(old + PIECE, 0);
            let mut got = 0;
            while old + got < buf.len() {
                match file.read(&mut buf[old + got..]) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => got += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_err(&p)(e)),
                }
            }
            buf.truncate(old + got);
        }
        let cut = if eof {
            buf.len()
        } else {
            match piece_end(&buf) {
                Some(c) => c,
                None if buf.len() > 4 * PIECE => {
                    return Ok(Err(format!("a line longer than {} MiB", (4 * PIECE) >> 20)));
                }
                None => continue,
            }
        };
        let piece = &buf[..cut];
        let text = if first {
            tagfile::decode(piece, "UTF-8")
        } else {
            std::str::from_utf8(piece)
                .map(str::to_string)
                .map_err(|e| format!("not valid UTF-8 ({e})"))
        };
        match text {
            Ok(text) => {
                take(&text, base)?;
                base += tagfile::lines(&text).len();
            }
            Err(e) => return Ok(Err(e)),
        }
        first = false;
        buf.drain(..cut);
        if eof && buf.is_empty() {
            return Ok(Ok(()));
        }
    }
}

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
                trawl_walk::WalkItem::Skipped { path, kind } => {
                    // A bag is read as it is: a link in its payload is never followed.
                    let what = match kind {
                        trawl_walk::SkipKind::Symlink => {
                            "symbolic link in payload (a bag holds none; not followed)".to_string()
                        }
                        k => format!("{} in payload", k.describe()),
                    };
                    report
                        .warnings
                        .push(BagFinding::about(path.display(), what))
                }
                trawl_walk::WalkItem::Error(e) => report.errors.push(BagFinding::from_error(&e)),
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

/// A listed path's entries: (index of the payload manifest, line, digest), one per manifest.
type Group = Vec<(usize, usize, String)>;

/// What the merge of the listings with the payload found (kept apart from the digest results,
/// which come from another thread, and put before them in the report).
#[derive(Default)]
struct Findings {
    errors: Vec<BagFinding>,
    warnings: Vec<BagFinding>,
    to_fetch: Vec<ToFetch>,
}

fn next(r: &mut trawl_spool::Records) -> std::io::Result<Option<(Vec<u8>, Vec<u8>)>> {
    Ok(r.next_record()?.map(|(k, v)| (k.to_vec(), v.to_vec())))
}

/// Walks the manifests' entries and the payload's files together, both in path order: for each
/// path, duplicates within a manifest, manifests that leave it out, a file in no manifest, a
/// listed file absent (to fetch, or missing); each listed file present goes to `send` (which
/// returns false to stop).
fn merge(
    bag: &Bag,
    on_disk: &OnDisk,
    spools: &Spools,
    send: &mut dyn FnMut(String, Group) -> bool,
) -> Result<Findings, BagError> {
    let io = spools.err();
    let mut f = Findings::default();
    // fetch.txt's items, a third sorted stream: an item met before the path it names is in no
    // payload manifest.
    let mut c = match &bag.fetch {
        Some(s) => Some(s.iter().map_err(&io)?),
        None => None,
    };
    let mut hc = match &mut c {
        Some(r) => next(r).map_err(&io)?,
        None => None,
    };
    let mut unlisted = LineProblems::new("fetch.txt");
    let mut advance_fetch = |hc: &mut Option<(Vec<u8>, Vec<u8>)>| -> Result<(), BagError> {
        *hc = match &mut c {
            Some(r) => next(r).map_err(&io)?,
            None => None,
        };
        Ok(())
    };
    let mut a = match &bag.listed {
        Some(l) => Some(l.iter().map_err(&io)?),
        None => None,
    };
    let mut b = on_disk.files.iter().map_err(&io)?;
    let mut ha = match &mut a {
        Some(r) => next(r).map_err(&io)?,
        None => None,
    };
    let mut hb = next(&mut b).map_err(&io)?;
    loop {
        let key = match (&ha, &hb) {
            (None, None) => break,
            (Some((k, _)), None) | (None, Some((k, _))) => k.clone(),
            (Some((x, _)), Some((y, _))) => x.min(y).clone(),
        };
        let path = String::from_utf8_lossy(&key).into_owned();
        while let Some((fk, _)) = &hc
            && *fk < key
        {
            unlisted.not_listed(&mut f.errors, fk);
            advance_fetch(&mut hc)?;
        }
        // This path's fetch item (the first, if it is listed twice).
        let mut fetched: Option<(Option<u64>, String)> = None;
        while let Some((fk, v)) = &hc
            && *fk == key
        {
            if fetched.is_none() && v.len() >= 8 {
                let len = u64::from_be_bytes(v[..8].try_into().expect("8 bytes"));
                let url = String::from_utf8_lossy(&v[8..]).into_owned();
                fetched = Some(((len != u64::MAX).then_some(len), url));
            }
            advance_fetch(&mut hc)?;
        }
        let mut group: Group = Vec::new();
        while let Some((k, v)) = &ha
            && *k == key
        {
            if let Some((slot, line, digest)) = decode_listed(v)
                && let Some((mi, m)) = bag.manifest_of(slot)
            {
                match group.iter().find(|g| g.0 == mi) {
                    Some((_, prev_line, prev)) => {
                        let (list, what) = if *prev != digest {
                            (&mut f.errors, "is listed twice with different digests")
                        } else {
                            (&mut f.warnings, "is listed twice")
                        };
                        list.push(BagFinding::about(
                            &m.file,
                            format!("'{path}' {what} (lines {prev_line} and {line})"),
                        ));
                    }
                    None => group.push((mi, line, digest)),
                }
            }
            ha = match &mut a {
                Some(r) => next(r).map_err(&io)?,
                None => None,
            };
        }
        let present = hb.as_ref().is_some_and(|(k, _)| *k == key);
        if present {
            hb = next(&mut b).map_err(&io)?;
        }
        if group.is_empty() {
            if present {
                f.errors.push(BagFinding::about(
                    &path,
                    "present in the payload but in no manifest",
                ));
            }
            if fetched.is_some() {
                unlisted.not_listed(&mut f.errors, &key);
            }
            continue;
        }
        if group.len() != bag.payload.len() {
            let missing_from: Vec<&str> = bag
                .payload
                .iter()
                .enumerate()
                .filter(|(i, _)| !group.iter().any(|(mi, _, _)| mi == i))
                .map(|(_, m)| m.file.as_str())
                .collect();
            f.errors.push(BagFinding::about(
                &path,
                format!(
                    "listed in some payload manifests but not in {}",
                    missing_from.join(", ")
                ),
            ));
        }
        if !present {
            match fetched {
                Some((length, url)) => f.to_fetch.push(ToFetch {
                    url,
                    length,
                    path: path.clone(),
                }),
                None => f.errors.push(BagFinding::about(
                    &path,
                    "listed in the manifests but missing",
                )),
            }
            continue;
        }
        if !send(path, group) {
            return Ok(f);
        }
    }
    while let Some((fk, _)) = &hc {
        unlisted.not_listed(&mut f.errors, fk);
        advance_fetch(&mut hc)?;
    }
    unlisted.finish_into(&mut f.errors);
    Ok(f)
}

/// Receives each payload file hashed, with its digests (for `bag update`).
pub(crate) type Sink<'a> = dyn FnMut(&str, &[(Algorithm, Vec<u8>)]) -> Result<(), BagError> + 'a;

/// Checks the payload against the manifests: completeness always; with `fast` false, the
/// digests too, every present listed file read once with `algs` (at least the manifests'
/// algorithms), each file's digests also handed to `sink`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_payload(
    bag: &Bag,
    on_disk: &OnDisk,
    fast: bool,
    algs: &[Algorithm],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
    report: &mut Report,
    mut sink: Option<&mut Sink<'_>>,
) -> Result<(), BagError> {
    let findings = if fast {
        merge(bag, on_disk, spools, &mut |_, _| true)?
    } else {
        let mut results: Vec<BagFinding> = Vec::new();
        let mut sink_err: Option<BagError> = None;
        let (mut files, mut bytes, mut unreadable) = (0u64, 0u64, 0u64);
        let merged = hash_stream(
            &bag.root,
            algs,
            cfg,
            progress,
            stop,
            |feeder| merge(bag, on_disk, spools, &mut |p, g| feeder.send(p, g)),
            |rel, group: Group, hashed| match hashed {
                Hashed::Digests { size, digests } => {
                    files += 1;
                    bytes += size;
                    for (mi, line, want) in &group {
                        let m = &bag.payload[*mi];
                        let Some(alg) = m.algorithm else { continue };
                        let actual = digests
                            .iter()
                            .find(|(a, _)| *a == alg)
                            .map(|(_, v)| hex::encode(v))
                            .unwrap_or_default();
                        if actual != *want {
                            results.push(BagFinding::about(
                                &rel,
                                format!(
                                    "{alg} mismatch ({} line {line}): manifest has {want}, file has {actual}",
                                    m.file
                                ),
                            ));
                        }
                    }
                    if let Some(sink) = sink.as_mut()
                        && sink_err.is_none()
                        && let Err(e) = sink(&rel, &digests)
                    {
                        sink_err = Some(e);
                        stop.request(trawl_stop::Reason::Failed);
                    }
                }
                Hashed::Unreadable(f) => {
                    unreadable += 1;
                    results.push(f);
                }
                Hashed::Failed(f) => results.push(f),
            },
        );
        if let Some(e) = sink_err {
            return Err(e);
        }
        let mut findings = merged?;
        report.files_checked += files;
        report.bytes_checked += bytes;
        report.unreadable += unreadable;
        findings.errors.append(&mut results);
        findings
    };
    report.errors.extend(findings.errors);
    report.warnings.extend(findings.warnings);
    report.to_fetch.extend(findings.to_fetch);
    Ok(())
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
    spools: &Spools,
) -> Result<Report, BagError> {
    let mut report = Report {
        fast,
        ..Report::default()
    };
    let bag = load(root, &mut report, spools)?;
    let on_disk = payload_files(root, &mut report, spools)?;

    // Payload-Oxum: octets.streams.
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
    // Completeness (every listed file present, nothing unlisted, the manifests agreeing) and,
    // unless fast, every present listed file's digests, in one merge of the sorted listings.
    let algs = bag.payload_algorithms();
    check_payload(
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
            let hashed = open_tag(root, &tag_dir, &e.path).and_then(|f| {
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

#[cfg(test)]
mod piece_tests {
    use super::piece_end;

    #[test]
    fn a_piece_ends_after_its_last_line_break_and_never_inside_a_crlf() {
        assert_eq!(piece_end(b"a\nb\nc"), Some(4));
        assert_eq!(piece_end(b"a\r\nb\r\n"), Some(6));
        // A CR at the very end may be the first half of a CRLF: not cut there.
        assert_eq!(piece_end(b"a\rb\r"), Some(2));
        assert_eq!(piece_end(b"abc\r"), None);
        assert_eq!(piece_end(b"abc"), None);
    }
}
