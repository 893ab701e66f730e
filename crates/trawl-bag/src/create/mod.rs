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

use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_scan::{Progress, ScanConfig};
use trawl_spool::Sorted;
use trawl_stop::Stop;

use crate::payload::{Listing, Spools};
use crate::{BagError, BagOutcome, io_err};

mod out;
mod recover;
mod tags;
mod tree;
mod update;

use out::Made;
pub use recover::{Recovered, recover};
pub(crate) use tags::{bag_info, write_atomic, write_tag_files};
pub(crate) use tree::{Tree, digest_tree};
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
    pub warnings: Vec<trawl_report::BagFinding>,
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
    refuse_unsafe(dir, opts, cfg)?;
    // The profile's requirements that the options do not meet refuse the creation at once.
    let (given, warnings) = planned(dir, opts)?;
    let ControlFlow::Continue(mut tree) = digest_tree(
        dir,
        &opts.algorithms,
        opts.links,
        cfg,
        progress,
        stop,
        &opts.spools,
    )?
    else {
        return Ok(BagOutcome::stopped(stop));
    };
    let files = tree.files.take().expect("digest_tree spools the files");
    refuse_problems(dir, opts, cfg, &files, &mut tree)?;
    let mut created = tree.created(warnings);
    let left_out = left_out_list(&mut tree.left_out);
    let info = bag_info(created.files, created.bytes, &given);
    // What the profile asks of the payload, and of the links' tag file, now that both are
    // known: before anything is written.
    if let Some(p) = opts.profile {
        refuse_planned_payload(dir, p, opts, &files, &info, &left_out)?;
    }
    let listing = Listing {
        sorted: &files,
        layout: &opts.algorithms,
        prefix: b"data/",
        skip: 8,
    };
    let made = match opts.out {
        None => create_in_place(dir, opts, &listing, &info).map(ControlFlow::Continue)?,
        Some(out) => Made {
            dir,
            out,
            files: &files,
            listing: &listing,
            info: &info,
            left_out: &left_out,
        }
        .create(opts, cfg, progress, stop, &mut created)?,
    };
    Ok(match made {
        ControlFlow::Continue(()) => BagOutcome::Finished(created),
        ControlFlow::Break(()) => BagOutcome::stopped(stop),
    })
}

/// bag-info.txt's labels and values, in order.
type Labels = Vec<(String, String)>;

/// bag-info.txt's labels from the options and what the profile fixes, and what the profile
/// recommends that they lack (warnings); a departure the options already make refuses the
/// creation.
fn planned(
    dir: &Path,
    opts: &CreateOptions<'_>,
) -> Result<(Labels, Vec<trawl_report::BagFinding>), BagError> {
    let mut given = opts.info.clone();
    let mut warnings = Vec::new();
    if let Some(p) = opts.profile {
        given.extend(p.fixed_info(&opts.info));
        let check = p.check_planned(&bag_info(0, 0, &given), &opts.algorithms, &[], None);
        refuse_departures(dir, p, &check.departures)?;
        warnings = check.warnings;
    }
    Ok((given, warnings))
}

/// The profile's rules of the payload (`files`) and of the tag files (the links' list when
/// `left_out` holds any), checked once the payload is read: a departure refuses the creation.
fn refuse_planned_payload(
    dir: &Path,
    p: &crate::Profile,
    opts: &CreateOptions<'_>,
    files: &Arc<Sorted>,
    info: &[(String, String)],
    left_out: &[u8],
) -> Result<(), BagError> {
    if !p.has_payload_rules() && left_out.is_empty() {
        return Ok(());
    }
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
            .map_err(opts.spools.err())?;
        Some(v)
    } else {
        None
    };
    let tags: Vec<String> = if left_out.is_empty() {
        Vec::new()
    } else {
        vec![LINKS_LEFT_OUT.to_string()]
    };
    let check = p.check_planned(info, &opts.algorithms, &tags, payload);
    refuse_departures(dir, p, &check.departures)
}

/// What `create` refuses before reading anything: no directory, an interrupted creation's
/// journal, `--out` inside the source, a bag already (in place), `--links follow` without
/// `--follow` (or the other way round).
fn refuse_unsafe(dir: &Path, opts: &CreateOptions<'_>, cfg: &ScanConfig) -> Result<(), BagError> {
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
    if opts.out.is_none() && !cfg.walk.excluding.is_empty() {
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
    if cfg.walk.follow_links != (opts.links == Links::Follow) {
        return Err(refused(
            dir,
            "--links follow and --follow go together (one implies the other)",
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
    departures: &[trawl_report::BagFinding],
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
/// In place with `-L`, each name reached through a link is one.
fn refuse_problems(
    dir: &Path,
    opts: &CreateOptions<'_>,
    cfg: &ScanConfig,
    files: &Arc<Sorted>,
    tree: &mut Tree,
) -> Result<(), BagError> {
    if opts.out.is_none() && cfg.walk.follow_links {
        refuse_links_in_place(dir, files, tree, &opts.spools)?;
    }
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
