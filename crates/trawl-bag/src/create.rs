//! Writing bags: in place (`bag create DIR`), into a new directory (`--out`), adding algorithms
//! (`bag update`), and undoing an interrupted in-place creation (`bag recover`).
//!
//! In-place creation is the one operation that changes the scanned tree. It reads and digests
//! everything first (nothing moves if any file cannot be read), then writes a journal
//! (`.trawl-bag-journal`) naming what it will move, moves the top-level entries into a hidden
//! directory with `rename(2)` (each move atomic), renames that directory to `data/`, writes the tag
//! files (each written to a temporary name, then renamed), and removes the journal last. If it is
//! interrupted at any point, `trawl bag recover DIR` puts everything back where it was.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use trawl_report::bag::BagFinding;
use trawl_stop::Stop;

use trawl_digest::Algorithm;
use trawl_printer::AtomicFile;
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanConfig};

use crate::validate::{self, Report};
use crate::{BagError, io_err};

pub const JOURNAL: &str = ".trawl-bag-journal";
pub const STAGING: &str = ".trawl-bag-payload";
/// The journal's first line, followed by the tag files the creation writes (space-separated);
/// the lines after it name the entries moved into `data/`.
const JOURNAL_V2: &str =
    "trawl bag create journal v2: these entries were moved into data/; tag files written: ";

/// The tag files an in-place creation with `algs` writes, in the order it writes them.
fn tag_file_names(algs: &[Algorithm]) -> Vec<String> {
    let mut v: Vec<String> = algs
        .iter()
        .map(|a| format!("manifest-{}.txt", a.bagit_name()))
        .collect();
    v.push("bag-info.txt".into());
    v.push("bagit.txt".into());
    v.extend(
        algs.iter()
            .map(|a| format!("tagmanifest-{}.txt", a.bagit_name())),
    );
    v
}

/// Whether `file` is a temporary file `AtomicFile` made for `name` (`.NAME.XXXXXX.trawl-tmp`).
fn is_temp_of(file: &str, name: &str) -> bool {
    file.strip_prefix('.')
        .and_then(|r| r.strip_prefix(name))
        .and_then(|r| r.strip_prefix('.'))
        .is_some_and(|r| r.ends_with(".trawl-tmp") && !r[..r.len() - 10].contains('/'))
}

/// Size and digests by path relative to the directory being bagged.
type SizedDigests = BTreeMap<String, (u64, Vec<(Algorithm, Vec<u8>)>)>;

/// Digests by payload path (`data/...`).
pub type Digests = BTreeMap<String, Vec<(Algorithm, Vec<u8>)>>;

/// What a creation did.
#[derive(Debug, Default)]
pub struct Created {
    pub files: u64,
    pub bytes: u64,
    pub linked: u64,
    pub copied: u64,
}

fn refused(path: &Path, msg: impl Into<String>) -> BagError {
    BagError::Refused {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// Reads every file under `dir` once, returning digests keyed by path relative to `dir`.
/// Any file that cannot be read, any special file or symlink, any name that is not UTF-8
/// refuses the whole operation, naming each one.
fn digest_tree(
    dir: &Path,
    algs: &[Algorithm],
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
) -> Result<(SizedDigests, Vec<String>), BagError> {
    let mut cfg = cfg.clone();
    cfg.roots = vec![dir.to_path_buf()];
    let mut files = BTreeMap::new();
    let mut problems = Vec::new();
    trawl_scan::scan(
        &cfg,
        Input::Walk,
        &DigestLanes(algs.to_vec()),
        progress,
        stop,
        &mut |ev| match ev {
            Event::File(rec) => {
                let rel = rec
                    .path
                    .strip_prefix(dir)
                    .unwrap_or(&rec.path)
                    .to_path_buf();
                match rel.to_str() {
                    Some(s) => {
                        let d = rec.digests().into_iter().collect();
                        files.insert(s.to_string(), (rec.size, d));
                    }
                    None => problems.push(format!(
                        "{}: name is not valid UTF-8; BagIt manifests are UTF-8",
                        rec.path.display()
                    )),
                }
            }
            Event::Skipped { path, kind } => {
                problems.push(format!("{}: {}", path.display(), kind.describe()))
            }
            Event::Failed(e) => problems.push(e.to_string()),
        },
    );
    if stop.is_stopping() {
        return Err(refused(dir, "interrupted before anything was changed"));
    }
    Ok((files, problems))
}

fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BagError> {
    let mut f = AtomicFile::create(path).map_err(io_err(path))?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.commit().map_err(io_err(path))
}

/// Writes payload manifests for `algs`, bag-info.txt and bagit.txt (if `info` is given), and tag
/// manifests for `tag_algs` over every tag file present.
pub fn write_tag_files(
    root: &Path,
    digests: &Digests,
    algs: &[Algorithm],
    info: Option<&[(String, String)]>,
    tag_algs: &[Algorithm],
) -> Result<(), BagError> {
    for alg in algs {
        let mut text = Vec::new();
        for (path, d) in digests {
            let hex = d
                .iter()
                .find(|(a, _)| a == alg)
                .map(|(_, v)| hex::encode(v))
                .unwrap_or_default();
            text.extend_from_slice(hex.as_bytes());
            text.extend_from_slice(b"  ");
            text.extend_from_slice(&crate::encode_path(path.as_bytes()));
            text.push(b'\n');
        }
        write_atomic(
            &root.join(format!("manifest-{}.txt", alg.bagit_name())),
            &text,
        )?;
    }
    if let Some(info) = info {
        let mut text = String::new();
        for (k, v) in info {
            text.push_str(&format!("{k}: {v}\n"));
        }
        write_atomic(&root.join("bag-info.txt"), text.as_bytes())?;
        // Only a new bag gets a bagit.txt; an updated bag keeps its version.
        write_atomic(
            &root.join("bagit.txt"),
            b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
        )?;
    }
    let mut tag_names: Vec<String> = std::fs::read_dir(root)
        .map_err(io_err(root))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with("tagmanifest-") && !n.starts_with('.') && n.ends_with(".txt"))
        .collect();
    tag_names.sort();
    for alg in tag_algs {
        let mut text = String::new();
        for n in &tag_names {
            let bytes = std::fs::read(root.join(n)).map_err(io_err(&root.join(n)))?;
            text.push_str(&format!(
                "{}  {n}\n",
                hex::encode(trawl_digest::digest(*alg, &bytes))
            ));
        }
        write_atomic(
            &root.join(format!("tagmanifest-{}.txt", alg.bagit_name())),
            text.as_bytes(),
        )?;
    }
    Ok(())
}

fn bag_info(files: u64, bytes: u64, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut info = vec![
        (
            "Bag-Software-Agent".to_string(),
            format!("trawl {}", env!("CARGO_PKG_VERSION")),
        ),
        ("Bagging-Date".to_string(), today()),
        ("Payload-Oxum".to_string(), format!("{bytes}.{files}")),
    ];
    info.extend(extra.iter().cloned());
    info
}

/// Options for [`create`].
pub struct CreateOptions<'a> {
    pub algorithms: Vec<Algorithm>,
    pub info: Vec<(String, String)>,
    pub out: Option<&'a Path>,
    /// With `out`: copy every payload file (a bag that shares no inode with the source) instead
    /// of hard-linking where possible.
    pub copy: bool,
}

/// Whether `inner` is `outer` or lies under it, comparing canonical paths (the deepest
/// existing ancestor of `inner`, for a directory not made yet).
fn is_within(inner: &Path, outer: &Path) -> bool {
    let Ok(outer) = std::fs::canonicalize(outer) else {
        return false;
    };
    let mut probe = inner.to_path_buf();
    let mut rest = Vec::new();
    let base = loop {
        match std::fs::canonicalize(&probe) {
            Ok(c) => break c,
            Err(_) => match (probe.parent(), probe.file_name()) {
                (Some(p), Some(n)) => {
                    rest.push(n.to_os_string());
                    probe = if p.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        p.to_path_buf()
                    };
                }
                _ => return false,
            },
        }
    };
    let full: PathBuf = rest.iter().rev().fold(base, |acc, n| acc.join(n));
    full.starts_with(&outer)
}

/// Creates a bag from `dir`: in place, or at `opts.out` leaving `dir` untouched.
pub fn create(
    dir: &Path,
    opts: &CreateOptions<'_>,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
) -> Result<Created, BagError> {
    if !dir.is_dir() {
        return Err(refused(dir, "not a directory"));
    }
    if dir.join(JOURNAL).exists() {
        return Err(refused(
            dir,
            format!(
                "an interrupted bag creation left {JOURNAL}; run `trawl bag recover {}` first",
                dir.display()
            ),
        ));
    }
    if let Some(out) = opts.out
        && is_within(out, dir)
    {
        return Err(refused(
            out,
            format!(
                "inside the source {}: --out must be outside it, which it leaves untouched",
                dir.display()
            ),
        ));
    }
    if opts.out.is_none() && dir.join("bagit.txt").exists() {
        return Err(refused(
            dir,
            "already a bag (bagit.txt exists); use `trawl bag update` to add algorithms",
        ));
    }
    let (files, mut problems) = digest_tree(dir, &opts.algorithms, cfg, progress, stop)?;
    // With -L a name may reach its file through a symbolic link. In place, the link itself
    // would be moved into data/, and a bag holds no links: refuse before anything moves. With
    // --out the target's content goes in as a regular file.
    if opts.out.is_none() && cfg.walk.follow_links {
        let base = std::fs::canonicalize(dir).map_err(io_err(dir))?;
        for rel in files.keys() {
            let through_link = std::fs::canonicalize(dir.join(rel))
                .map(|c| c != base.join(rel))
                .unwrap_or(true);
            if through_link {
                problems.push(format!(
                    "{}: reached through a symbolic link (-L); in place it would go into data/ as a link, which no bag may hold: use --out, which copies what it points to",
                    dir.join(rel).display()
                ));
            }
        }
    }
    if !problems.is_empty() {
        let list = problems
            .iter()
            .map(|p| format!("\n  {p}"))
            .collect::<String>();
        return Err(refused(
            dir,
            format!(
                "nothing was changed: {} entries cannot be bagged:{list}",
                problems.len()
            ),
        ));
    }
    let bytes: u64 = files.values().map(|(s, _)| *s).sum();
    let mut created = Created {
        files: files.len() as u64,
        bytes,
        ..Default::default()
    };
    let digests: Digests = files
        .iter()
        .map(|(p, (_, d))| (format!("data/{p}"), d.clone()))
        .collect();
    let info = bag_info(created.files, bytes, &opts.info);

    match opts.out {
        None => {
            let mut top: Vec<std::ffi::OsString> = std::fs::read_dir(dir)
                .map_err(io_err(dir))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .filter(|n| n != JOURNAL && n != STAGING)
                .collect();
            top.sort();
            let mut journal = format!(
                "{JOURNAL_V2}{}\n",
                tag_file_names(&opts.algorithms).join(" ")
            )
            .into_bytes();
            for n in &top {
                journal.extend(crate::encode_path(n.as_bytes()));
                journal.push(b'\n');
            }
            write_atomic(&dir.join(JOURNAL), &journal)?;
            let staging = dir.join(STAGING);
            std::fs::create_dir(&staging).map_err(io_err(&staging))?;
            for n in &top {
                std::fs::rename(dir.join(n), staging.join(n)).map_err(io_err(&dir.join(n)))?;
            }
            std::fs::rename(&staging, dir.join("data")).map_err(io_err(&staging))?;
            write_tag_files(
                dir,
                &digests,
                &opts.algorithms,
                Some(&info),
                &opts.algorithms,
            )?;
            std::fs::remove_file(dir.join(JOURNAL)).map_err(io_err(&dir.join(JOURNAL)))?;
        }
        Some(out) => {
            if out.exists() {
                return Err(refused(
                    out,
                    "already exists; --out must name a new directory",
                ));
            }
            let parent = match out.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let name = out
                .file_name()
                .ok_or_else(|| refused(out, "no directory name"))?;
            let tmp = parent.join(format!(".{}.trawl-tmp", name.to_string_lossy()));
            if tmp.exists() {
                std::fs::remove_dir_all(&tmp).map_err(io_err(&tmp))?;
            }
            let result = (|| {
                let mut copied = Vec::new();
                for rel in files.keys() {
                    let src = dir.join(rel);
                    let dst = tmp.join("data").join(rel);
                    if let Some(p) = dst.parent() {
                        std::fs::create_dir_all(p).map_err(io_err(p))?;
                    }
                    // A link itself is never put in the bag: what it points to is copied.
                    let is_link = std::fs::symlink_metadata(&src)
                        .map(|m| m.file_type().is_symlink())
                        .unwrap_or(false);
                    if !opts.copy && !is_link && std::fs::hard_link(&src, &dst).is_ok() {
                        created.linked += 1;
                    } else {
                        std::fs::copy(&src, &dst).map_err(io_err(&src))?;
                        created.copied += 1;
                        copied.push(format!("data/{rel}"));
                    }
                    if stop.is_stopping() {
                        return Err(refused(out, "interrupted; nothing was created"));
                    }
                }
                // Copies are read back and checked against the source digests.
                let mut report = Report::default();
                let got = validate::hash_files(
                    &tmp,
                    &copied,
                    &opts.algorithms,
                    cfg,
                    progress,
                    stop,
                    &mut report,
                );
                for p in &copied {
                    if got.get(p) != digests.get(p) {
                        return Err(refused(
                            &tmp.join(p),
                            "copy does not match its source; nothing was created",
                        ));
                    }
                }
                write_tag_files(
                    &tmp,
                    &digests,
                    &opts.algorithms,
                    Some(&info),
                    &opts.algorithms,
                )?;
                std::fs::rename(&tmp, out).map_err(io_err(out))
            })();
            if result.is_err() {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            result?;
        }
    }
    Ok(created)
}

/// What [`recover`] did.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Entries moved back from the payload directory.
    pub moved: usize,
    /// Files trawl had written (tag files, their temporary files) that were removed.
    pub removed: Vec<String>,
}

/// Undoes an interrupted in-place creation: moves every entry the journal names back, and removes
/// exactly the files the creation wrote (the tag files its journal names and their temporary
/// files), nothing else.
pub fn recover(dir: &Path) -> Result<Recovered, BagError> {
    let mut done = Recovered::default();
    let top_names = |dir: &Path| -> Result<Vec<String>, BagError> {
        Ok(std::fs::read_dir(dir)
            .map_err(io_err(dir))?
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .collect())
    };
    let remove = |name: &str, done: &mut Recovered| -> Result<(), BagError> {
        let p = dir.join(name);
        std::fs::remove_file(&p).map_err(io_err(&p))?;
        done.removed.push(name.to_string());
        Ok(())
    };
    let jpath = dir.join(JOURNAL);
    let journal = match std::fs::read(&jpath) {
        Ok(j) => j,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Interrupted while the journal itself was being written: nothing was moved yet.
            let temps: Vec<String> = top_names(dir)?
                .into_iter()
                .filter(|n| is_temp_of(n, JOURNAL))
                .collect();
            if temps.is_empty() {
                return Err(refused(
                    dir,
                    "no interrupted bag creation here (no journal)",
                ));
            }
            for t in temps {
                remove(&t, &mut done)?;
            }
            return Ok(done);
        }
        Err(e) => return Err(io_err(&jpath)(e)),
    };
    let text = String::from_utf8_lossy(&journal);
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let names: Vec<String> = lines.map(crate::decode_path).collect();
    // The tag files the creation wrote: named by a v2 journal; an older journal did not name
    // them, and a creation then wrote the standard ones only.
    let tags: Vec<String> = match header.strip_prefix(JOURNAL_V2) {
        Some(list) => list
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        None => top_names(dir)?
            .into_iter()
            .filter(|n| {
                n == "bagit.txt"
                    || n == "bag-info.txt"
                    || (n.starts_with("manifest-") || n.starts_with("tagmanifest-"))
                        && n.ends_with(".txt")
            })
            .collect(),
    };
    let staging = dir.join(STAGING);
    let from = if staging.is_dir() {
        staging.clone()
    } else {
        dir.join("data")
    };
    for n in top_names(dir)? {
        if tags.iter().any(|t| is_temp_of(&n, t)) {
            remove(&n, &mut done)?;
        }
    }
    for t in &tags {
        // A tag file of ours sits at the top only once its name's payload entry (if the user had
        // one) was moved away; an entry of that name still at the top is the user's.
        let theirs_still_here = names.contains(t) && !from.join(t).exists();
        if !theirs_still_here && dir.join(t).symlink_metadata().is_ok() {
            remove(t, &mut done)?;
        }
    }
    if from.is_dir() {
        for n in &names {
            let src = from.join(n);
            if src.symlink_metadata().is_ok() {
                std::fs::rename(&src, dir.join(n)).map_err(io_err(&src))?;
                done.moved += 1;
            }
        }
        std::fs::remove_dir(&from).map_err(io_err(&from))?;
    }
    std::fs::remove_file(&jpath).map_err(io_err(&jpath))?;
    Ok(done)
}

/// Adds payload manifests for `new_algs` to a valid bag, verifying the existing manifests in the
/// same read pass; refuses (changing nothing) if the bag does not validate.
/// What [`update`] did: the validation of the bag as it was, and the algorithms it added (none
/// when the bag does not validate, or when every one asked for was there already).
#[derive(Debug)]
pub struct Updated {
    pub report: Report,
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
) -> Result<Updated, BagError> {
    let mut report = Report::default();
    let bag = validate::load(root, &mut report)?;
    let on_disk = validate::payload_files(root, &mut report);
    let existing = bag.payload_algorithms();
    let mut all = existing.clone();
    for a in new_algs {
        if !all.contains(a) {
            all.push(*a);
        }
    }
    let listed: Vec<String> = on_disk.keys().cloned().collect();
    let got = validate::hash_files(root, &listed, &all, cfg, progress, stop, &mut report);
    if stop.is_stopping() {
        return Err(refused(root, "interrupted; nothing was changed"));
    }
    for m in &bag.payload {
        let Some(alg) = m.algorithm else { continue };
        let mut seen = 0;
        for e in &m.entries {
            seen += 1;
            let actual = got
                .get(&e.path)
                .and_then(|d| d.iter().find(|(a, _)| *a == alg))
                .map(|(_, v)| hex::encode(v));
            match actual {
                Some(a) if a == e.digest => {}
                Some(_) => report.errors.push(BagFinding::about(
                    &e.path,
                    format!("{alg} mismatch ({} line {})", m.file, e.line),
                )),
                None => report.errors.push(BagFinding::about(
                    &e.path,
                    format!("listed in {} but missing or unreadable", m.file),
                )),
            }
        }
        if seen != on_disk.len() {
            report.errors.push(BagFinding::about(
                &m.file,
                format!("lists {seen} files but the payload holds {}", on_disk.len()),
            ));
        }
    }
    let (present, add): (Vec<Algorithm>, Vec<Algorithm>) =
        new_algs.iter().partition(|a| existing.contains(a));
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
    let digests: Digests = got.into_iter().collect();
    let mut tag_algs: Vec<Algorithm> = bag.tag.iter().filter_map(|m| m.algorithm).collect();
    for a in &add {
        if !tag_algs.contains(a) {
            tag_algs.push(*a);
        }
    }
    write_tag_files(root, &digests, &add, None, &tag_algs)?;
    Ok(Updated {
        report,
        added: add,
        present,
    })
}
