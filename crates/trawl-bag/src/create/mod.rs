//! Writing bags: in place (`bag create DIR`), into a new directory (`--out`), adding algorithms
//! (`bag update`), and undoing an interrupted in-place creation (`bag recover`).
//!
//! In-place creation is the one operation that changes the scanned tree. It reads and digests
//! everything first (nothing moves if any file cannot be read), then writes a journal
//! (`.trawl-bag-journal`) naming what it will move, moves the top-level entries into a hidden
//! directory with `rename(2)` (each move atomic), renames that directory to `data/`, writes the tag
//! files (each written to a temporary name, then renamed), and removes the journal last. If it is
//! interrupted at any point, `trawl bag recover DIR` puts everything back where it was.
//!
//! This module creates; [`recover`] undoes, [`update`] adds manifests.

use std::io::Write;
use std::ops::ControlFlow;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_atomic::AtomicFile;
use trawl_digest::Algorithm;
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanConfig};
use trawl_spool::Sorted;
use trawl_stop::Stop;
use trawl_walk::{ExcludedKind, SkipKind};

use crate::payload::{
    Hashed, Listing, Spools, digest_reader, hash_stream, write_payload_manifests,
};
use crate::{BagError, BagOutcome, io_err};

mod recover;
mod update;

pub use recover::{Recovered, recover};
pub use update::{InfoEdits, Updated, update};

/// The journal an in-place creation keeps in the directory until it is done (what `recover` reads).
pub const JOURNAL: &str = ".trawl-bag-journal";
/// Where an in-place creation moves the payload before it becomes `data/`.
pub const STAGING: &str = ".trawl-bag-payload";
/// The journal's first line, followed by the tag files the creation writes (space-separated);
/// the lines after it name the entries moved into `data/`.
pub(crate) const JOURNAL_V2: &str =
    "trawl bag create journal v2: these entries were moved into data/; tag files written: ";

/// The tag files an in-place creation with `algs` writes, in the order it writes them.
pub(crate) fn tag_file_names(algs: &[Algorithm]) -> Vec<String> {
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
pub(crate) fn is_temp_of(file: &str, name: &str) -> bool {
    file.strip_prefix('.')
        .and_then(|r| r.strip_prefix(name))
        .and_then(|r| r.strip_prefix('.'))
        .is_some_and(|r| r.ends_with(".trawl-tmp") && !r[..r.len() - 10].contains('/'))
}

/// The files of a tree to bag, read once: by path relative to the tree, each with its size
/// (8 bytes, big-endian) and its digests in the algorithms' order.
pub(crate) struct Tree {
    pub(crate) files: Option<Arc<Sorted>>,
    pub(crate) count: u64,
    pub(crate) bytes: u64,
    /// Entries that cannot be bagged, the first [`PROBLEMS_SHOWN`] of them.
    pub(crate) problems: Vec<String>,
    pub(crate) more_problems: u64,
    /// With [`Links::Skip`]: each symbolic link left out, as (relative path, target).
    pub(crate) left_out: Vec<(Vec<u8>, Vec<u8>)>,
    /// What the user's rules left out (`--exclude`): not in the bag.
    pub(crate) excluded: Excluded,
}

/// How many entries that cannot be bagged are named (the rest are counted).
pub(crate) const PROBLEMS_SHOWN: usize = 1000;

impl Tree {
    pub(crate) fn problem(&mut self, p: String) {
        if self.problems.len() < PROBLEMS_SHOWN {
            self.problems.push(p);
        } else {
            self.more_problems += 1;
        }
    }
}

/// What a creation did.
#[derive(Debug, Default)]
pub struct Created {
    /// Payload files.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files hard-linked into a separate destination (with [`CreateOptions::link`]).
    pub linked: u64,
    /// Files copied into it (each read back and checked against its source's digests).
    pub copied: u64,
    /// Of the copies, those that share the source's blocks (a reflink, where the file system
    /// offers one): a write to either makes it a copy of its own, so the bag never changes
    /// with the source.
    pub reflinked: u64,
    /// Symbolic links left out ([`Links::Skip`]), listed in [`LINKS_LEFT_OUT`].
    pub links_left_out: u64,
    /// What the profile ([`CreateOptions::profile`]) recommends that the bag lacks.
    pub warnings: Vec<trawl_report::bag::BagFinding>,
    /// What the user's rules left out of the bag ([`ScanConfig`]'s `walk.excluding`).
    pub excluded: Excluded,
}

/// Entries the user's rules (`--exclude`) left out of a bag, by kind.
#[derive(Debug, Default, Clone, Copy)]
pub struct Excluded {
    /// Directories left out whole (never listed).
    pub directories: u64,
    /// Regular files left out.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Other entries left out (links, special files).
    pub other: u64,
}

/// What a bag does with the symbolic links of its source (a bag holds no link).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Links {
    /// Each one is a problem that refuses the creation (the default).
    #[default]
    Refuse,
    /// Left out of the bag (with `out` only), each listed in the bag's [`LINKS_LEFT_OUT`].
    Skip,
    /// What each points to is bagged under the link's name; a dangling one is a problem.
    Follow,
}

/// The tag file that lists the links [`Links::Skip`] left out: `PATH -> TARGET` per line, the
/// path under `data/`, both encoded as manifest paths are.
pub const LINKS_LEFT_OUT: &str = "links-left-out.txt";

pub(crate) fn refused(path: &Path, msg: impl Into<String>) -> BagError {
    BagError::Refused {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

/// Reads every file under `dir` once, its digests spooled by path relative to `dir`. Any file
/// that cannot be read, any special file or symlink, any name that is not UTF-8 is a problem
/// that refuses the whole operation.
pub(crate) fn digest_tree(
    dir: &Path,
    algs: &[Algorithm],
    links: Links,
    cfg: &ScanConfig,
    progress: &dyn Progress,
    stop: &Stop,
    spools: &Spools,
) -> Result<ControlFlow<(), Tree>, BagError> {
    let mut cfg = cfg.clone();
    cfg.roots = vec![dir.to_path_buf()];
    let mut spool = spools.spool(2);
    let mut tree = Tree {
        files: None,
        count: 0,
        bytes: 0,
        problems: Vec::new(),
        more_problems: 0,
        left_out: Vec::new(),
        excluded: Excluded::default(),
    };
    let mut pushed: std::io::Result<()> = Ok(());
    let mut value = Vec::new();
    let engine = stop.child();
    trawl_scan::scan(
        &cfg,
        Input::Walk,
        &DigestLanes(algs.to_vec()),
        progress,
        &engine,
        &mut |ev| {
            match ev {
            Event::File(rec) => {
                let rel = rec.path.strip_prefix(dir).unwrap_or(&rec.path);
                match rel.to_str() {
                    Some(s) => {
                        tree.count += 1;
                        tree.bytes += rec.size;
                        value.clear();
                        value.extend_from_slice(&rec.size.to_be_bytes());
                        for (_, d) in rec.digests() {
                            value.extend_from_slice(&d);
                        }
                        if pushed.is_ok() {
                            pushed = spool.push(s.as_bytes(), &value);
                            if pushed.is_err() {
                                engine.request(trawl_stop::Reason::Failed);
                            }
                        }
                    }
                    None => tree.problem(format!(
                        "{}: name is not valid UTF-8; BagIt manifests are UTF-8",
                        rec.path.display()
                    )),
                }
            }
            Event::Skipped {
                path,
                kind: SkipKind::Symlink,
            } if links == Links::Skip => match left_out_link(dir, &path) {
                Ok(link) => tree.left_out.push(link),
                Err(p) => tree.problem(p),
            },
            Event::Skipped {
                path,
                kind: SkipKind::Symlink,
            } => tree.problem(format!(
                "{}: symbolic link; a bag holds none: --links skip leaves the links out (with --out), --links follow bags what they point to",
                path.display()
            )),
            Event::Skipped { path, kind } => {
                tree.problem(format!("{}: {}", path.display(), kind.describe()))
            }
            Event::Failed(e) => tree.problem(e.to_string()),
            // Not in the bag, and no problem: the user left it out.
            Event::Excluded(x) => {
                let n = &mut tree.excluded;
                match x.kind {
                    ExcludedKind::Directory => n.directories += 1,
                    ExcludedKind::File => {
                        n.files += 1;
                        n.bytes += x.size.unwrap_or(0);
                    }
                    ExcludedKind::Other(_) => n.other += 1,
                }
            }
        }
        },
    );
    pushed.map_err(spools.err())?;
    if stop.is_stopping() {
        return Ok(ControlFlow::Break(()));
    }
    tree.files = Some(Arc::new(spool.finish().map_err(spools.err())?));
    Ok(ControlFlow::Continue(tree))
}

/// A symbolic link the walk found under `dir`, left out ([`Links::Skip`]): its path relative
/// to `dir` and its target. A name that is no longer a link when its target is read (swapped
/// for a directory or a file during the run, or removed) is a problem that refuses the
/// creation, saying what it now is: listed as a link it would be a lie, and what it now holds
/// was never walked.
fn left_out_link(dir: &Path, path: &Path) -> Result<(Vec<u8>, Vec<u8>), String> {
    let rel = path.strip_prefix(dir).unwrap_or(path);
    match std::fs::read_link(path) {
        Ok(target) => Ok((
            rel.as_os_str().as_bytes().to_vec(),
            target.into_os_string().into_vec(),
        )),
        Err(e) => {
            let now = match std::fs::symlink_metadata(path) {
                Ok(m) if m.is_dir() => "is now a directory".to_string(),
                Ok(m) if m.is_file() => "is now a regular file".to_string(),
                Ok(m) if !m.file_type().is_symlink() => {
                    format!("is now a {}", SkipKind::of(&m.file_type()).describe())
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => "is gone".to_string(),
                _ => format!("cannot be read ({e})"),
            };
            Err(format!(
                "{}: a symbolic link when the tree was listed, and {now}: it changed during the run; bag it again",
                path.display()
            ))
        }
    }
}

pub(crate) fn today() -> String {
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

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BagError> {
    let mut f = AtomicFile::create(path)?;
    f.write_all(bytes).map_err(io_err(path))?;
    f.commit().map_err(io_err(path))
}

/// bag-info.txt's text: `Label: value` per line, in the order given.
pub(crate) fn info_text(info: &[(String, String)]) -> String {
    info.iter().map(|(k, v)| format!("{k}: {v}\n")).collect()
}

/// Writes payload manifests for `algs` from `listing` (when given), bagit.txt (a new bag,
/// `new_bag`), then bag-info.txt from `info` (when given) and tag manifests for `tag_algs`
/// over every tag file: the top's `*.txt` files, the paths in `listed` (what the bag's tag
/// manifests list, which may lie below the top; percent-encoded as written) and bag-info.txt.
/// bag-info.txt's and the tag manifests' texts are all made before the first of them is
/// replaced, and each file is replaced whole (written under a temporary name, then renamed).
pub(crate) fn write_tag_files(
    root: &Path,
    listing: Option<&Listing<'_>>,
    algs: &[Algorithm],
    info: Option<&[(String, String)]>,
    new_bag: bool,
    tag_algs: &[Algorithm],
    listed: &[String],
) -> Result<(), BagError> {
    if let Some(listing) = listing {
        write_payload_manifests(root, listing, algs)?;
    }
    if new_bag {
        // Only a new bag gets a bagit.txt; an updated bag keeps its version.
        write_atomic(
            &root.join("bagit.txt"),
            b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n",
        )?;
    }
    let info = info.map(info_text);
    let mut tag_names: Vec<String> = std::fs::read_dir(root)
        .map_err(io_err(root))?
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io_err(root))?
        .into_iter()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n.ends_with(".txt"))
        .chain(listed.iter().map(|p| crate::decode_path(p)))
        .chain(info.is_some().then(|| "bag-info.txt".to_string()))
        .filter(|n| !n.starts_with("tagmanifest-") && !n.starts_with("data/"))
        .collect();
    tag_names.sort();
    tag_names.dedup();
    // Each tag file read once for every algorithm (a payload manifest may be large), beneath
    // the bag as validation reads them; bag-info.txt's new text from memory.
    let dir = trawl_read::RootDir::open(root).map_err(io_err(root))?;
    let mut texts = vec![String::new(); tag_algs.len()];
    for n in &tag_names {
        let digests = match (&info, n.as_str()) {
            (Some(text), "bag-info.txt") => digest_reader(text.as_bytes(), tag_algs),
            _ => match crate::validate::open_tag(root, &dir, n)? {
                Some(f) => digest_reader(f, tag_algs),
                None => continue,
            },
        }
        .map_err(io_err(&root.join(n)))?;
        let shown = String::from_utf8_lossy(&crate::encode_path(n.as_bytes())).into_owned();
        for (text, d) in texts.iter_mut().zip(digests) {
            text.push_str(&format!("{}  {shown}\n", hex::encode(d)));
        }
    }
    let mut files = Vec::new();
    if let Some(text) = &info {
        files.push((root.join("bag-info.txt"), text.clone()));
    }
    for (alg, text) in tag_algs.iter().zip(texts) {
        files.push((
            root.join(format!("tagmanifest-{}.txt", alg.bagit_name())),
            text,
        ));
    }
    let mut ready = Vec::new();
    for (p, text) in &files {
        let mut f = AtomicFile::create(p)?;
        f.write_all(text.as_bytes()).map_err(io_err(p))?;
        ready.push((p, f));
    }
    for (p, f) in ready {
        f.commit().map_err(io_err(p))?;
    }
    Ok(())
}

pub(crate) fn bag_info(
    files: u64,
    bytes: u64,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
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
    /// The payload manifests' algorithms.
    pub algorithms: Vec<Algorithm>,
    /// `bag-info.txt`'s labels and values beyond those trawl writes.
    pub info: Vec<(String, String)>,
    /// A separate destination (None: the directory becomes a bag in place).
    pub out: Option<&'a Path>,
    /// Where lists wait past their memory.
    pub spools: Spools,
    /// With `out`: hard-link each payload file to its source where possible, instead of copying
    /// it. The bag then shares its files with the source: an edit of one is an edit of the other.
    /// By default every file is copied (a reflink where the file system offers one), so that
    /// the bag shares no inode with the source.
    pub link: bool,
    /// What to do with symbolic links.
    pub links: Links,
    /// A BagIt Profile the bag is made to: bag-info.txt gets what it fixes (its identifier, each
    /// label with one allowed value); what it requires and the options lack refuses the
    /// creation before anything is read or written (what it asks of the payload, once the
    /// payload is read and before anything is written).
    pub profile: Option<&'a crate::Profile>,
}

/// Whether `inner` is `outer` or lies under it, comparing canonical paths (the deepest
/// existing ancestor of `inner`, for a directory not made yet).
pub(crate) fn is_within(inner: &Path, outer: &Path) -> bool {
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
) -> Result<BagOutcome<Created>, BagError> {
    refuse_unsafe(dir, opts, &cfg.walk.excluding)?;
    let follow = opts.links == Links::Follow;
    if cfg.walk.follow_links != follow {
        return Err(refused(
            dir,
            "--links follow and --follow go together (one implies the other)",
        ));
    }
    // The profile's requirements that the options do not meet refuse the creation at once.
    let mut given = opts.info.clone();
    let mut warnings = Vec::new();
    if let Some(p) = opts.profile {
        given.extend(p.fixed_info(&opts.info));
        let check = p.check_planned(&bag_info(0, 0, &given), &opts.algorithms, &[], None);
        refuse_departures(dir, p, &check.departures)?;
        warnings = check.warnings;
    }
    let spools = &opts.spools;
    let ControlFlow::Continue(mut tree) = digest_tree(
        dir,
        &opts.algorithms,
        opts.links,
        cfg,
        progress,
        stop,
        spools,
    )?
    else {
        return Ok(BagOutcome::stopped(stop));
    };
    let files = tree.files.take().expect("digest_tree spools the files");
    if opts.out.is_none() && cfg.walk.follow_links {
        refuse_links_in_place(dir, &files, &mut tree, spools)?;
    }
    refuse_problems(dir, &tree)?;
    let mut created = Created {
        files: tree.count,
        bytes: tree.bytes,
        links_left_out: tree.left_out.len() as u64,
        warnings,
        excluded: tree.excluded,
        ..Default::default()
    };
    let left_out = left_out_list(&mut tree.left_out);
    let info = bag_info(created.files, created.bytes, &given);
    // What the profile asks of the payload, and of the links' tag file, now that both are
    // known: before anything is written.
    if let Some(p) = opts.profile
        && (p.has_payload_rules() || !left_out.is_empty())
    {
        let payload = if p.has_payload_rules() {
            let mut v = Vec::new();
            files
                .for_each(|rel, value| {
                    let size = value
                        .get(..8)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0, u64::from_be_bytes);
                    v.push((format!("data/{}", String::from_utf8_lossy(rel)), size));
                    Ok::<(), std::io::Error>(())
                })
                .map_err(spools.err())?;
            Some(v)
        } else {
            None
        };
        let tags: Vec<String> = if left_out.is_empty() {
            Vec::new()
        } else {
            vec![LINKS_LEFT_OUT.to_string()]
        };
        let check = p.check_planned(&info, &opts.algorithms, &tags, payload);
        refuse_departures(dir, p, &check.departures)?;
    }
    let listing = Listing {
        sorted: &files,
        layout: &opts.algorithms,
        prefix: b"data/",
        skip: 8,
    };
    match opts.out {
        None => create_in_place(dir, opts, &listing, &info)?,
        Some(out) => {
            let made = Made {
                dir,
                out,
                files: &files,
                listing: &listing,
                info: &info,
                left_out: &left_out,
            };
            if made
                .create(opts, cfg, progress, stop, &mut created)?
                .is_break()
            {
                return Ok(BagOutcome::stopped(stop));
            }
        }
    }
    Ok(BagOutcome::Finished(created))
}

/// What `create` refuses before reading anything: no directory, an interrupted creation's
/// journal, `--out` inside the source, a bag already (in place).
fn refuse_unsafe(
    dir: &Path,
    opts: &CreateOptions<'_>,
    cfg_excluding: &trawl_walk::Exclusion,
) -> Result<(), BagError> {
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
    if opts.out.is_none() && opts.links == Links::Skip {
        return Err(refused(
            dir,
            "--links skip needs --out DEST: in place the links would stay in data/, where a bag may hold nothing its manifests do not list (with --out the bag leaves them out and DIR keeps them)",
        ));
    }
    if opts.out.is_none() && !cfg_excluding.is_empty() {
        return Err(refused(
            dir,
            "--exclude needs --out DEST: in place what is excluded would stay in data/, where a bag may hold nothing its manifests do not list (with --out the bag leaves it out and DIR keeps it)",
        ));
    }
    if opts.out.is_none() && dir.join("bagit.txt").exists() {
        return Err(refused(
            dir,
            "already a bag (bagit.txt exists); use `trawl bag update` to add algorithms",
        ));
    }
    Ok(())
}

/// With -L a name may reach its file through a symbolic link. In place, the link itself would
/// be moved into data/, and a bag holds no links: each such name is a problem, refused before
/// anything moves. (With --out the target's content goes in as a regular file.)
fn refuse_links_in_place(
    dir: &Path,
    files: &Arc<Sorted>,
    tree: &mut Tree,
    spools: &Spools,
) -> Result<(), BagError> {
    let base = std::fs::canonicalize(dir).map_err(io_err(dir))?;
    files
        .for_each(|rel, _| {
            let rel = Path::new(std::ffi::OsStr::from_bytes(rel));
            let through_link = std::fs::canonicalize(dir.join(rel))
                .map(|c| c != base.join(rel))
                .unwrap_or(true);
            if through_link {
                tree.problem(format!(
                    "{}: reached through a symbolic link (-L); in place it would go into data/ as a link, which no bag may hold: use --out, which copies what it points to",
                    dir.join(rel).display()
                ));
            }
            Ok::<(), std::io::Error>(())
        })
        .map_err(spools.err())?;
    Ok(())
}

/// [`LINKS_LEFT_OUT`]'s text: `data/PATH -> TARGET` per link, in path order, encoded as
/// manifest paths are (a line break in a name cannot break a line).
fn left_out_list(links: &mut [(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    links.sort();
    let mut text = Vec::new();
    for (path, target) in links.iter() {
        text.extend_from_slice(b"data/");
        text.extend(crate::encode_path(path));
        text.extend_from_slice(b" -> ");
        text.extend(crate::encode_path(target));
        text.push(b'\n');
    }
    text
}

/// A bag that would depart from its profile is not made: each departure named, nothing
/// written.
fn refuse_departures(
    dir: &Path,
    profile: &crate::Profile,
    departures: &[trawl_report::bag::BagFinding],
) -> Result<(), BagError> {
    if departures.is_empty() {
        return Ok(());
    }
    let list: String = departures
        .iter()
        .map(|d| format!("\n  {}", d.message))
        .collect();
    Err(refused(
        dir,
        format!(
            "not bagged, nothing written: the bag would not meet the BagIt Profile {} ({} {}):{list}\n  (bag-info.txt's labels go in with --info 'LABEL: VALUE', the manifests' algorithms with -d)",
            profile.identifier(),
            departures.len(),
            if departures.len() == 1 {
                "departure"
            } else {
                "departures"
            },
        ),
    ))
}

/// Entries that cannot be bagged: nothing is changed, and each is named (the first ones).
fn refuse_problems(dir: &Path, tree: &Tree) -> Result<(), BagError> {
    if !tree.problems.is_empty() {
        let mut list = tree
            .problems
            .iter()
            .map(|p| format!("\n  {p}"))
            .collect::<String>();
        if tree.more_problems > 0 {
            list.push_str(&format!("\n  ... and {} more", tree.more_problems));
        }
        return Err(refused(
            dir,
            format!(
                "nothing was changed: {} entries cannot be bagged:{list}",
                tree.problems.len() as u64 + tree.more_problems
            ),
        ));
    }
    Ok(())
}

/// In place: a journal naming what moves, the top-level entries moved into a staging directory
/// (each `rename(2)` atomic), that renamed to `data/`, the tag files, the journal removed last.
fn create_in_place(
    dir: &Path,
    opts: &CreateOptions<'_>,
    listing: &Listing<'_>,
    info: &[(String, String)],
) -> Result<(), BagError> {
    let mut top: Vec<std::ffi::OsString> = std::fs::read_dir(dir)
        .map_err(io_err(dir))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<std::io::Result<Vec<_>>>()
        .map_err(io_err(dir))?
        .into_iter()
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
    let made = (|| {
        let staging = dir.join(STAGING);
        std::fs::create_dir(&staging).map_err(io_err(&staging))?;
        for n in &top {
            std::fs::rename(dir.join(n), staging.join(n)).map_err(io_err(&dir.join(n)))?;
        }
        std::fs::rename(&staging, dir.join("data")).map_err(io_err(&staging))?;
        write_tag_files(
            dir,
            Some(listing),
            &opts.algorithms,
            Some(info),
            true,
            &opts.algorithms,
            &[],
        )?;
        std::fs::remove_file(dir.join(JOURNAL)).map_err(io_err(&dir.join(JOURNAL)))
    })();
    // A step that failed (a full disk while the tag files are written) is rolled back from the
    // journal at once: the directory is left as it was, not half a bag.
    made.map_err(|e| match recover(dir) {
        Ok(_) => BagError::Refused {
            path: dir.to_path_buf(),
            msg: format!("not bagged ({e}); the directory was put back as it was"),
        },
        Err(again) => BagError::Refused {
            path: dir.to_path_buf(),
            msg: format!(
                "not bagged ({e}), and putting it back failed too ({again}): run `trawl bag recover {}` once that is fixed",
                dir.display()
            ),
        },
    })
}

/// A bag made at `--out`: what it is made from.
struct Made<'a> {
    dir: &'a Path,
    out: &'a Path,
    files: &'a Arc<Sorted>,
    listing: &'a Listing<'a>,
    info: &'a [(String, String)],
    /// [`LINKS_LEFT_OUT`]'s text (empty: no such file).
    left_out: &'a [u8],
}

impl Made<'_> {
    /// In a directory of its own, under a name no one else has, renamed into place once whole.
    fn create(
        &self,
        opts: &CreateOptions<'_>,
        cfg: &ScanConfig,
        progress: &dyn Progress,
        stop: &Stop,
        created: &mut Created,
    ) -> Result<ControlFlow<()>, BagError> {
        let (out, listing, info) = (self.out, self.listing, self.info);
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
        // A directory of its own, made now under a name no one else has (never one that is
        // there already, whoever made it): removed on failure, renamed into place on
        // success.
        let made = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".trawl-tmp")
            .tempdir_in(&parent)
            .map_err(io_err(&parent))?;
        let tmp = made.path().to_path_buf();
        let result = (|| {
            let ControlFlow::Continue(copied) = self.link_or_copy(&tmp, opts, stop, created)?
            else {
                return Ok(ControlFlow::Break(()));
            };
            if self
                .check_copies(&tmp, &copied, opts, cfg, progress, stop)?
                .is_break()
            {
                return Ok(ControlFlow::Break(()));
            }
            if !self.left_out.is_empty() {
                write_atomic(&tmp.join(LINKS_LEFT_OUT), self.left_out)?;
            }
            write_tag_files(
                &tmp,
                Some(listing),
                &opts.algorithms,
                Some(info),
                true,
                &opts.algorithms,
                &[],
            )?;
            // Never over anything that appeared at `out` meanwhile (an empty directory
            // would be replaced by rename(2)).
            let dir = trawl_read::DirAt::open(&parent).map_err(io_err(&parent))?;
            let tmp_name = tmp.file_name().map(|n| n.as_bytes()).unwrap_or_default();
            dir.rename(tmp_name, &dir, name.as_bytes())
                .map_err(io_err(out))?;
            Ok(ControlFlow::Continue(()))
        })();
        match result {
            Ok(ControlFlow::Continue(())) => {
                // Renamed: nothing left for the guard to remove.
                let _ = made.keep();
                Ok(ControlFlow::Continue(()))
            }
            // Stopped or failed: the guard removes the directory it made, and only that.
            other => other,
        }
    }

    /// Every payload file into `tmp/data`: copied (a reflink where the file system offers one,
    /// which shares blocks but no writes), or hard-linked where it can be with `link` (never a
    /// link's target); the copies, each with the digests its source had.
    fn link_or_copy(
        &self,
        tmp: &Path,
        opts: &CreateOptions<'_>,
        stop: &Stop,
        created: &mut Created,
    ) -> Result<ControlFlow<(), Arc<Sorted>>, BagError> {
        let (dir, files) = (self.dir, self.files);
        let spools = &opts.spools;
        let mut copied = spools.spool(2);
        let walked = files.for_each(|rel, value| {
            // Once stopping, the rest of the list is passed over, nothing copied.
            if stop.is_stopping() {
                return Ok(());
            }
            let rel = std::ffi::OsStr::from_bytes(rel);
            let src = dir.join(rel);
            let dst = tmp.join("data").join(rel);
            let step = (|| {
                if let Some(p) = dst.parent() {
                    std::fs::create_dir_all(p).map_err(io_err(p))?;
                }
                // A link itself is never put in the bag: what it points to is copied.
                let is_link = std::fs::symlink_metadata(&src)
                    .map(|m| m.file_type().is_symlink())
                    .unwrap_or(false);
                if opts.link && !is_link && std::fs::hard_link(&src, &dst).is_ok() {
                    created.linked += 1;
                } else {
                    // FICLONE where the file system shares blocks (XFS, btrfs), else a copy.
                    let reflinked =
                        reflink_copy::reflink_or_copy(&src, &dst).map_err(io_err(&src))?;
                    if reflinked.is_none() {
                        created.reflinked += 1;
                    }
                    created.copied += 1;
                    let mut key = b"data/".to_vec();
                    key.extend_from_slice(rel.as_bytes());
                    copied.push(&key, &value[8..]).map_err(spools.err())?;
                }
                Ok(())
            })();
            step.map_err(crate::Ended::Bag)
        });
        match walked {
            Ok(()) => {}
            Err(crate::Ended::Bag(e)) => return Err(e),
            Err(crate::Ended::Spool(e)) => return Err(spools.err()(e)),
        }
        if stop.is_stopping() {
            return Ok(ControlFlow::Break(()));
        }
        Ok(ControlFlow::Continue(Arc::new(
            copied.finish().map_err(spools.err())?,
        )))
    }

    /// The copies read back and checked against their sources' digests: the first that differs
    /// (or a stop) ends the creation with nothing created.
    fn check_copies(
        &self,
        tmp: &Path,
        copied: &Arc<Sorted>,
        opts: &CreateOptions<'_>,
        cfg: &ScanConfig,
        progress: &dyn Progress,
        stop: &Stop,
    ) -> Result<ControlFlow<()>, BagError> {
        let spools = &opts.spools;
        let check = Listing {
            sorted: copied,
            layout: &opts.algorithms,
            prefix: b"",
            skip: 0,
        };
        let mut bad: Option<String> = None;
        let fed = hash_stream(
            tmp,
            &opts.algorithms,
            cfg,
            progress,
            stop,
            |feeder| -> std::io::Result<()> {
                let mut records = copied.iter()?;
                while let Some((rel, value)) = records.next_record()? {
                    let rel = String::from_utf8_lossy(rel).into_owned();
                    if feeder.send(rel, value.to_vec()).is_break() {
                        break;
                    }
                }
                Ok(())
            },
            |rel, want: Vec<u8>, hashed| {
                let same = match &hashed {
                    Hashed::Digests { digests, .. } => opts.algorithms.iter().all(|a| {
                        let got = digests
                            .iter()
                            .find(|(b, _)| b == a)
                            .map(|(_, v)| v.as_slice());
                        got.is_some() && got == check.digest(&want, *a)
                    }),
                    _ => false,
                };
                if !same && bad.is_none() {
                    bad = Some(rel);
                }
            },
        );
        fed.map_err(spools.err())?;
        if stop.is_stopping() {
            return Ok(ControlFlow::Break(()));
        }
        if let Some(p) = bad {
            return Err(refused(
                &tmp.join(p),
                "copy does not match its source; nothing was created",
            ));
        }
        Ok(ControlFlow::Continue(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link the walk listed that is something else by the time its target is read (swapped
    /// for a directory during the run) is a problem naming what it now is, never a link with
    /// an empty target; a link is listed with its target.
    #[test]
    fn a_link_swapped_for_a_directory_is_named_as_what_it_now_is() {
        let t = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("some/target", t.path().join("l")).unwrap();
        assert_eq!(
            left_out_link(t.path(), &t.path().join("l")),
            Ok((b"l".to_vec(), b"some/target".to_vec()))
        );
        std::fs::create_dir(t.path().join("was-a-link")).unwrap();
        let e = left_out_link(t.path(), &t.path().join("was-a-link")).unwrap_err();
        assert!(
            e.contains("was-a-link") && e.contains("now a directory"),
            "{e}"
        );
    }
}
