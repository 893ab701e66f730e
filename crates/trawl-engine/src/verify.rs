//! `verify`: files checked against a manifest (sha256sum, b3sum, BSD, hashdeep and the other
//! formats `trawl-manifest` reads), read through the scan engine, one state per entry.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use trawl_digest::Algorithm;
use trawl_manifest::{Entry, ManifestError, algorithms_of};
use trawl_read::ReadError;
use trawl_report::verify::{VerifyEntry, VerifyReport, VerifyState};
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanConfig, ScanError};
use trawl_stop::{Reason, Stop};

/// What to verify.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
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
}

/// Something wrong with the manifest itself, naming its line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ManifestProblem {
    #[error("{}:{line}: {reason}", manifest.display())]
    Line {
        manifest: PathBuf,
        line: usize,
        reason: String,
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
    #[error(
        "{}:{line}: {} is listed again (first on line {first}) with a different {algorithm} digest",
        manifest.display(),
        String::from_utf8_lossy(name)
    )]
    Conflict {
        manifest: PathBuf,
        line: usize,
        first: usize,
        name: Vec<u8>,
        algorithm: Algorithm,
    },
}

/// What happens on the way.
#[derive(Debug)]
pub enum Notice<'a> {
    Manifest(&'a ManifestProblem),
    /// Digests of this length were taken for `assumed` by their length alone; the first files
    /// that could be read match `found` instead, and are checked with it.
    AlgorithmFound {
        assumed: Algorithm,
        found: Algorithm,
    },
    /// A failure that is not one entry's (e.g. a directory that could not be listed).
    Failed(&'a ScanError),
}

/// Why a verification could not run.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{}: cannot read manifest: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {reason}", path.display())]
    Unusable { path: PathBuf, reason: String },
    #[error("{}: the root (--root) is not a directory: {reason}", path.display())]
    Root { path: PathBuf, reason: String },
}

/// How a verification ended.
#[derive(Debug)]
pub enum VerifyOutcome {
    Finished(VerifyReport),
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

/// Whether a manifest name could lead outside the root: absolute, or with a `..` component.
fn leaves_root(name: &[u8]) -> bool {
    name.first() == Some(&b'/') || name.split(|&b| b == b'/').any(|c| c == b"..")
}

/// Reads the manifest, then every file it lists, and says what became of each.
pub fn verify(
    opts: &VerifyOptions,
    progress: &dyn Progress,
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
) -> Result<VerifyOutcome, VerifyError> {
    let manifest = &opts.manifest;
    match std::fs::metadata(&opts.root) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(VerifyError::Root {
                path: opts.root.clone(),
                reason: "not a directory".into(),
            });
        }
        Err(e) => {
            return Err(VerifyError::Root {
                path: opts.root.clone(),
                reason: e.to_string(),
            });
        }
    }
    let data = if manifest.as_os_str() == "-" {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut v).map(|_| v)
    } else {
        std::fs::read(manifest)
    }
    .map_err(|source| VerifyError::Read {
        path: manifest.clone(),
        source,
    })?;
    let hint = manifest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parsed = trawl_manifest::detect_and_parse(&data, &opts.prefer, &hint).map_err(|e| {
        VerifyError::Unusable {
            path: manifest.clone(),
            reason: e.to_string(),
        }
    })?;
    let mut parsed = parsed;
    for assumed in std::mem::take(&mut parsed.guessed) {
        if let Some(found) = probe(&parsed.entries, assumed, &opts.root, opts.confine, stop)
            && found != assumed
        {
            notice(Notice::AlgorithmFound { assumed, found });
            for e in &mut parsed.entries {
                for (a, _) in &mut e.digests {
                    if *a == assumed {
                        *a = found;
                    }
                }
            }
        }
    }

    let mut problems = 0;
    let mut problem = |p: ManifestProblem| {
        problems += 1;
        notice(Notice::Manifest(&p));
    };
    for e in &parsed.errors {
        problem(match e {
            ManifestError::Line { line, reason } => ManifestProblem::Line {
                manifest: manifest.clone(),
                line: *line,
                reason: reason.clone(),
            },
            ManifestError::Whole(reason) => ManifestProblem::Whole {
                manifest: manifest.clone(),
                reason: reason.clone(),
            },
        });
    }

    // One entry per path; the same path listed twice must agree.
    let mut entries: Vec<Entry> = Vec::new();
    let mut by_name: HashMap<Vec<u8>, usize> = HashMap::new();
    for mut e in parsed.entries {
        if e.path.ends_with(b"/") {
            problem(ManifestProblem::Line {
                manifest: manifest.clone(),
                line: e.line,
                reason: format!(
                    "'{}' names a directory, not a file",
                    String::from_utf8_lossy(&e.path)
                ),
            });
            continue;
        }
        e.path = normalize(&e.path);
        if opts.confine && leaves_root(&e.path) {
            problem(ManifestProblem::LeavesRoot {
                manifest: manifest.clone(),
                line: e.line,
                name: e.path,
            });
            continue;
        }
        let Some(&i) = by_name.get(&e.path) else {
            by_name.insert(e.path.clone(), entries.len());
            entries.push(e);
            continue;
        };
        let prev = &mut entries[i];
        for (alg, d) in e.digests {
            match prev.digests.iter().find(|(a, _)| *a == alg) {
                Some((_, pd)) if *pd != d => problem(ManifestProblem::Conflict {
                    manifest: manifest.clone(),
                    line: e.line,
                    first: prev.line,
                    name: e.path.clone(),
                    algorithm: alg,
                }),
                Some(_) => {}
                None => prev.digests.push((alg, d)),
            }
        }
    }

    let root = &opts.root;
    let paths: Vec<PathBuf> = entries
        .iter()
        .map(|e| root.join(OsStr::from_bytes(&e.path)))
        .collect();
    let index: HashMap<&Path, usize> = paths
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_path(), i))
        .collect();
    let algorithms = algorithms_of(&entries);
    let not_read = || VerifyState::Unreadable("not read".into());
    let mut states: Vec<VerifyState> = vec![not_read(); entries.len()];
    let mut cfg = opts.cfg.clone();
    cfg.roots = vec![root.clone()];
    if !algorithms.is_empty() {
        let lanes = DigestLanes(algorithms);
        trawl_scan::scan(
            &cfg,
            Input::Files(&paths),
            &lanes,
            progress,
            stop,
            &mut |ev| {
                let (path, st) = match ev {
                    Event::File(rec) => {
                        let st = compare(&entries[index[rec.path.as_path()]], &rec);
                        (rec.path, st)
                    }
                    Event::Failed(ScanError::Read(ReadError::Vanished { path })) => {
                        (path, VerifyState::Missing)
                    }
                    Event::Failed(ScanError::Read(r)) => {
                        (r.path().to_path_buf(), VerifyState::Unreadable(r.reason()))
                    }
                    Event::Failed(other) => return notice(Notice::Failed(&other)),
                    Event::Skipped { path, kind } => {
                        (path, VerifyState::Unreadable(kind.describe().to_string()))
                    }
                };
                if let Some(&i) = index.get(path.as_path()) {
                    states[i] = st;
                }
            },
        );
    }
    if let Some(r) = stop.reason() {
        return Ok(VerifyOutcome::Stopped(r));
    }
    let mut not_listed = Vec::new();
    if opts.strict {
        let listed: HashSet<&[u8]> = entries.iter().map(|e| e.path.as_slice()).collect();
        not_listed = unlisted_files(root, &cfg.walk, manifest)
            .into_iter()
            .filter(|n| !listed.contains(n.as_slice()))
            .collect();
        not_listed.sort();
    }
    let before = entries.len();
    let mut pairs: Vec<(Entry, VerifyState)> = entries.into_iter().zip(states).collect();
    if opts.ignore_missing {
        pairs.retain(|(_, st)| *st != VerifyState::Missing);
    }
    let missing_ignored = (before - pairs.len()) as u64;
    let entries = pairs
        .into_iter()
        .map(|(e, state)| VerifyEntry {
            name: e.path,
            line: e.line,
            state,
        })
        .collect();
    Ok(VerifyOutcome::Finished(VerifyReport {
        entries,
        not_listed,
        strict: opts.strict,
        manifest_problems: problems,
        missing_ignored,
    }))
}

/// How many listed files a probe reads at most.
const PROBE_FILES: usize = 3;

/// Which algorithm of `assumed`'s length the digests taken for it really are: the candidates
/// ([`trawl_manifest::same_length`]) are computed over the first few listed files that can be
/// read (at most [`PROBE_FILES`]), and the one matching most of them wins, `assumed` on a tie.
/// `None` when no file could be read. A real mismatch (corruption) matches no candidate and
/// leaves `assumed` in place, so that it is reported as FAILED.
fn probe(
    entries: &[Entry],
    assumed: Algorithm,
    root: &Path,
    confine: bool,
    stop: &Stop,
) -> Option<Algorithm> {
    use std::io::Read;
    let candidates = trawl_manifest::same_length(assumed.hex_len());
    let mut score = vec![0usize; candidates.len()];
    let mut read = 0;
    for e in entries {
        if read == PROBE_FILES || stop.is_stopping() {
            break;
        }
        let Some((_, want)) = e.digests.iter().find(|(a, _)| *a == assumed) else {
            continue;
        };
        let name = strip_dot_slash(&e.path);
        if confine && leaves_root(name) {
            continue;
        }
        let path = root.join(OsStr::from_bytes(name));
        let Ok(mut f) = trawl_read::open_for_read(&path).map(|o| o.file) else {
            continue;
        };
        let mut hashers: Vec<_> = candidates.iter().map(|a| a.hasher()).collect();
        let mut buf = vec![0u8; 1 << 16];
        let ok = loop {
            match f.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => hashers.iter_mut().for_each(|h| h.update(&buf[..n])),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break false,
            }
        };
        if !ok {
            continue;
        }
        read += 1;
        for (i, h) in hashers.into_iter().enumerate() {
            if h.finish() == *want {
                score[i] += 1;
            }
        }
    }
    if read == 0 {
        return None;
    }
    let best = (0..candidates.len()).max_by_key(|&i| (score[i], usize::MAX - i))?;
    Some(if score[best] > score[0] {
        candidates[best]
    } else {
        assumed
    })
}

/// A file read against its entry: the size first, then the first digest that differs.
fn compare(e: &Entry, rec: &trawl_scan::FileRecord) -> VerifyState {
    if let Some(sz) = e.size
        && sz != rec.size
    {
        return VerifyState::Failed(format!("size is {}, manifest says {sz}", rec.size));
    }
    for (alg, got) in rec.digests() {
        let want = e.digests.iter().find(|(a, _)| *a == alg).map(|(_, d)| d);
        if want.is_some_and(|w| *w != got) {
            return VerifyState::Failed(format!("{alg} differs"));
        }
    }
    VerifyState::Ok
}

/// Every regular file under `root`, as manifest names, except the manifest itself.
fn unlisted_files(root: &Path, opts: &trawl_walk::WalkOptions, manifest: &Path) -> Vec<Vec<u8>> {
    let (tx, rx) = crossbeam_channel::bounded(1024);
    let stop = Stop::new();
    // The manifest itself is not an unlisted file; compare by identity, not by name.
    let manifest_id = std::fs::metadata(manifest).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    });
    let roots = vec![root.to_path_buf()];
    let names = crate::names::ManifestNames::new(&roots);
    std::thread::scope(|s| {
        s.spawn(|| {
            trawl_walk::walk(&roots, opts, &tx, &stop, &|_| {});
            drop(tx);
        });
        let mut out = Vec::new();
        for item in rx {
            if let trawl_walk::WalkItem::File(f) = item {
                if manifest_id == Some((f.dev, f.ino)) {
                    continue;
                }
                out.push(names.name(&f.path));
            }
        }
        out
    })
}
