//! `verify`: files checked against a manifest (sha256sum, b3sum, BSD, hashdeep and the other
//! formats `trawl-manifest` reads), read through the scan engine, one state per entry.
//!
//! This module holds the types and [`verify`], which runs the passes ([`passes`]); entries and
//! results wait in spools as [`records`] encodes them; [`probe`] settles ambiguous digest
//! lengths and compares; [`strict`] lists what the manifest does not.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use trawl_digest::Algorithm;
use trawl_report::{VerifyEntries, VerifyReport};
use trawl_scan::{Progress, ScanConfig, ScanError};
use trawl_stop::{Reason, Stop};

mod passes;
mod probe;
mod records;
mod strict;
#[cfg(test)]
mod tests;

use {passes::*, probe::*, records::*, strict::*};

/// What to verify.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// The manifest file.
    pub manifest: PathBuf,
    /// Where the manifest's names are resolved (`.` by default).
    pub root: PathBuf,
    /// The digest to read where a line's length fits several (`-d`).
    pub prefer: Vec<Algorithm>,
    /// Refuse absolute names and names with `..`.
    pub confine: bool,
    /// Also list the files under the root that the manifest does not.
    pub strict: bool,
    /// Leave listed files that do not exist out of the report (counted in
    /// `VerifyReport::missing_ignored`).
    pub ignore_missing: bool,
    /// The engine settings (`roots` is ignored: the manifest says what to read).
    pub cfg: ScanConfig,
    /// Where the entries wait, sorted, past what RAM holds (default: the system's).
    pub temp_dir: Option<PathBuf>,
    /// Bytes of entries held in RAM, over the three spools (names, merged, results).
    pub memory: usize,
    /// Where the root is a store's prefix (`s3://BUCKET/PREFIX`): its objects, which the
    /// names are resolved among instead of a local directory (always confined: a name that is
    /// not a plain one is refused).
    pub objects: Option<std::sync::Arc<dyn trawl_scan::Listing>>,
}

/// Default [`VerifyOptions::memory`].
pub const VERIFY_MEMORY: usize = 24 << 20;

/// Something wrong with the manifest itself, naming its line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ManifestProblem {
    /// A line that is no checksum line (improperly formatted, as `sha256sum -c` says).
    #[error("{}:{line}: {reason}", manifest.display())]
    Line {
        manifest: PathBuf,
        line: usize,
        reason: String,
    },
    /// A line too long to read (it may name a file: refused, not taken for no checksum line).
    #[error("{}:{line}: longer than {} bytes: not read", manifest.display(), trawl_manifest::MAX_LINE)]
    TooLong { manifest: PathBuf, line: usize },
    /// A checksum line whose name ends in `/`: a directory, never verified.
    #[error("{}:{line}: '{}' names a directory, not a file", manifest.display(), String::from_utf8_lossy(name))]
    Directory {
        manifest: PathBuf,
        line: usize,
        name: Vec<u8>,
    },
    #[error("{}: {reason}", manifest.display())]
    Whole { manifest: PathBuf, reason: String },
    #[error(
        "{}:{line}: {}: refused: absolute or '..' names may lead outside the root (--confine; --no-confine checks them as sha256sum does)",
        manifest.display(),
        String::from_utf8_lossy(name)
    )]
    LeavesRoot {
        manifest: PathBuf,
        line: usize,
        name: Vec<u8>,
    },
}

impl ManifestProblem {
    /// Whether the line is no checksum line at all (then, as with `sha256sum -c`, it is only
    /// warned about unless `--strict`), rather than one naming a file that is refused.
    pub fn is_malformed(&self) -> bool {
        matches!(self, ManifestProblem::Line { .. })
    }
}

/// What happens on the way.
#[derive(Debug)]
pub enum Notice<'a> {
    /// A line of the manifest that cannot be used.
    Manifest(&'a ManifestProblem),
    /// Digests of this length were taken for `assumed` by their length alone; the first files
    /// that could be read match `found` instead, and are checked with it.
    AlgorithmFound {
        /// The algorithm first assumed.
        assumed: Algorithm,
        /// The one the files match.
        found: Algorithm,
    },
    /// Digests of this length were taken for `assumed` by their length alone, and the first
    /// files read settle no algorithm: those entries are verified only where a file matches
    /// `assumed`, and are NOT VERIFIED otherwise (never FAILED).
    AlgorithmUnsettled {
        /// The algorithm assumed.
        assumed: Algorithm,
        /// The listed files read to find it.
        read: usize,
        /// The algorithms some of them matched (several: the manifest mixes them).
        matched: Vec<Algorithm>,
    },
    /// A failure that is not one entry's (e.g. a directory that could not be listed).
    Failed(&'a ScanError),
}

/// Why a verification could not run.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The manifest could not be read.
    #[error("{}: cannot read manifest: {source}", path.display())]
    Read {
        /// The manifest.
        path: PathBuf,
        /// The read's error.
        source: std::io::Error,
    },
    /// The manifest holds nothing to verify with.
    #[error("{}: {reason}", path.display())]
    Unusable {
        /// The manifest.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The root given cannot be used.
    #[error("{}: the root (--root) is not a directory: {reason}", path.display())]
    Root {
        /// The root given.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// `--strict`: the root's listing failed, so what is not listed cannot be known.
    #[error("{}: cannot list the root for --strict: {reason}", path.display())]
    Unlisted {
        /// The root.
        path: PathBuf,
        /// The listing's error.
        reason: String,
    },
    /// The entries could not wait on disk.
    #[error("{}: cannot keep the manifest's entries (--temp-dir): {source}", dir.display())]
    Spool {
        /// Where they wait.
        dir: PathBuf,
        /// The write's error.
        source: std::io::Error,
    },
}

/// How a verification ended.
#[derive(Debug)]
pub enum VerifyOutcome {
    /// Every entry was checked.
    Finished(VerifyReport),
    /// Stopped by the token; the report would be partial.
    Stopped(Reason),
}

/// `./name` and `name` are the same file (find and hashdeep write the former); `.//etc/x` is
/// `etc/x` below the root, as sha256sum opens it, never `/etc/x`.
fn strip_dot_slash(mut name: &[u8]) -> &[u8] {
    while let Some(rest) = name.strip_prefix(b"./") {
        name = rest;
        while let Some(rest) = name.strip_prefix(b"/") {
            name = rest;
        }
    }
    name
}

/// A name as the file system resolves it below the root: `./` prefixes and `.` components
/// dropped, repeated slashes made one, so that `a//b`, `./a/b` and `a/./b` are one entry (a
/// leading `/` stays: an absolute name).
fn normalize(name: &[u8]) -> Vec<u8> {
    let name = strip_dot_slash(name);
    let mut out: Vec<u8> = Vec::with_capacity(name.len());
    if name.first() == Some(&b'/') {
        out.push(b'/');
    }
    for c in name
        .split(|&b| b == b'/')
        .filter(|c| !c.is_empty() && *c != b".")
    {
        if !out.is_empty() && out != b"/" {
            out.push(b'/');
        }
        out.extend_from_slice(c);
    }
    out
}

/// Whether a manifest name could lead outside the root: absolute, or with a `..` component
/// (trawl-read's rule for a name that stays beneath its root).
fn leaves_root(name: &[u8]) -> bool {
    trawl_read::plain_segments(name).is_none()
}

/// Reads the manifest, then every file it lists, and says what became of each: three passes,
/// each over a spool, so that memory stays within `opts.memory` whatever the manifest's length.
pub fn verify(
    opts: &VerifyOptions,
    progress: &dyn Progress,
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
) -> Result<VerifyOutcome, VerifyError> {
    if opts.objects.is_none() {
        check_root(&opts.root)?;
    }
    let mut pass = Passes {
        opts,
        temp: opts.temp_dir.clone().unwrap_or_else(std::env::temp_dir),
        problems: 0,
        malformed: 0,
        buf: Vec::new(),
    };
    let file = pass.open_manifest()?;
    let Some(listed) = pass.parse(file, stop, notice)? else {
        return Ok(VerifyOutcome::Stopped(
            stop.reason().unwrap_or(Reason::Failed),
        ));
    };
    let rounds = pass.one_per_name(listed.by_name, &listed.settled)?;
    let read = pass.read(
        &rounds,
        listed.algorithms,
        &listed.unsettled,
        progress,
        stop,
        notice,
    )?;
    let unique = &rounds[0];
    if let Some(r) = stop.reason() {
        return Ok(VerifyOutcome::Stopped(r));
    }
    let mut not_listed = Vec::new();
    if opts.strict {
        not_listed = unlisted_files(
            &opts.root,
            opts.objects.as_deref(),
            &opts.cfg.walk,
            &opts.manifest,
            unique,
            &pass.temp,
            opts.memory / 3,
        )
        .map_err(|e| match e {
            Unlisted::Listing(reason) => VerifyError::Unlisted {
                path: opts.root.clone(),
                reason,
            },
            Unlisted::Spool(e) => pass.spool_err()(e),
        })?;
    }
    let results = Arc::new(read.results.finish().map_err(pass.spool_err())?);
    let entries = entries_of(results);
    Ok(VerifyOutcome::Finished(VerifyReport {
        entries,
        counts: read.counts,
        not_listed,
        strict: opts.strict,
        manifest_problems: pass.problems,
        malformed_lines: pass.malformed,
        missing_ignored: read.missing_ignored,
    }))
}

/// The report's entries, read back from the results spool in manifest order each time
/// they are asked for.
fn entries_of(results: Arc<trawl_spool::Sorted>) -> VerifyEntries {
    VerifyEntries::source(Box::new(move |f| {
        let ended = results.for_each_until(|k, v| {
            let mut e = decode_result(v)?;
            e.line = u64::from_be_bytes(k.try_into().map_err(|_| damaged())?) as usize;
            Ok::<_, std::io::Error>(f(&e))
        });
        // Broken off: the caller has seen enough.
        ended.map(|_| ())
    }))
}

/// The root names are resolved under: it must be a directory.
fn check_root(root: &Path) -> Result<(), VerifyError> {
    match std::fs::metadata(root) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(VerifyError::Root {
            path: root.to_path_buf(),
            reason: "not a directory".into(),
        }),
        Err(e) => Err(VerifyError::Root {
            path: root.to_path_buf(),
            reason: e.to_string(),
        }),
    }
}
