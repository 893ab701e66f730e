//! `verify`: files checked against a manifest (sha256sum, b3sum, BSD, hashdeep and the other
//! formats `trawl-manifest` reads), read through the scan engine, one state per entry.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use trawl_digest::Algorithm;
use trawl_manifest::{Entry, ManifestError, PiecesError};
use trawl_read::ReadError;
use trawl_report::verify::{VerifyCounts, VerifyEntries, VerifyEntry, VerifyReport, VerifyState};
use trawl_scan::beneath::NotBeneath;
use trawl_scan::{DigestLanes, Event, Input, Progress, ScanConfig, ScanError};
use trawl_spool::{Sorted, Spool};
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
    /// Where the entries wait, sorted, past what RAM holds (default: the system's).
    pub temp_dir: Option<PathBuf>,
    /// Bytes of entries held in RAM, over the three spools (names, merged, results).
    pub memory: usize,
}

/// Default [`VerifyOptions::memory`].
pub const VERIFY_MEMORY: usize = 24 << 20;

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
    #[error("{}: cannot keep the manifest's entries (--temp-dir): {source}", dir.display())]
    Spool {
        dir: PathBuf,
        source: std::io::Error,
    },
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

/// Reads the manifest, then every file it lists, and says what became of each: three passes,
/// each over a spool, so that memory stays within `opts.memory` whatever the manifest's length.
pub fn verify(
    opts: &VerifyOptions,
    progress: &dyn Progress,
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
) -> Result<VerifyOutcome, VerifyError> {
    check_root(&opts.root)?;
    let mut pass = Passes {
        opts,
        temp: opts.temp_dir.clone().unwrap_or_else(std::env::temp_dir),
        problems: 0,
        buf: Vec::new(),
    };
    let file = pass.open_manifest()?;
    let Some(listed) = pass.parse(file, stop, notice)? else {
        return Ok(VerifyOutcome::Stopped(
            stop.reason().unwrap_or(Reason::Failed),
        ));
    };
    let unique = pass.one_per_name(listed.by_name, &listed.remap, notice)?;
    let read = pass.read(&unique, listed.algorithms, progress, stop, notice)?;
    if let Some(r) = stop.reason() {
        return Ok(VerifyOutcome::Stopped(r));
    }
    let mut not_listed = Vec::new();
    if opts.strict {
        not_listed = unlisted_files(
            &opts.root,
            &opts.cfg.walk,
            &opts.manifest,
            &unique,
            &pass.temp,
            opts.memory / 3,
        )
        .map_err(pass.spool_err())?;
    }
    let results = Arc::new(read.results.finish().map_err(pass.spool_err())?);
    let entries = VerifyEntries::source(Box::new(move |f| {
        results.for_each(|k, v| {
            let mut e = decode_result(v)?;
            e.line = u64::from_be_bytes(k.try_into().map_err(|_| damaged())?) as usize;
            f(&e)
        })
    }));
    Ok(VerifyOutcome::Finished(VerifyReport {
        entries,
        counts: read.counts,
        not_listed,
        strict: opts.strict,
        manifest_problems: pass.problems,
        missing_ignored: read.missing_ignored,
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

/// What the passes share: the options, where spools go, the manifest's problems counted, and
/// one buffer entries are encoded in.
struct Passes<'a> {
    opts: &'a VerifyOptions,
    temp: PathBuf,
    problems: usize,
    buf: Vec<u8>,
}

/// The manifest's entries by name, the algorithms they use, and the algorithms a probe found
/// where the manifest's digest lengths fit several (assumed, found).
struct Listed {
    by_name: Spool,
    algorithms: Vec<Algorithm>,
    remap: Vec<(Algorithm, Algorithm)>,
}

/// The files read: every entry's state, by manifest line, and the counts.
struct Read {
    results: Spool,
    counts: VerifyCounts,
    missing_ignored: u64,
}

impl Passes<'_> {
    fn spool_err(&self) -> impl Fn(std::io::Error) -> VerifyError + use<> {
        let dir = self.temp.clone();
        move |source| VerifyError::Spool {
            dir: dir.clone(),
            source,
        }
    }

    fn problem(&mut self, p: ManifestProblem, notice: &mut dyn FnMut(Notice<'_>)) {
        self.problems += 1;
        notice(Notice::Manifest(&p));
    }

    /// The manifest, opened; one on stdin is copied to an unnamed temporary file first (it is
    /// read twice).
    fn open_manifest(&self) -> Result<std::fs::File, VerifyError> {
        let manifest = &self.opts.manifest;
        let read_err = |source: std::io::Error| VerifyError::Read {
            path: manifest.clone(),
            source,
        };
        if manifest.as_os_str() == "-" {
            let mut f = tempfile::tempfile_in(&self.temp).map_err(self.spool_err())?;
            std::io::copy(&mut std::io::stdin().lock(), &mut f).map_err(read_err)?;
            Ok(f)
        } else {
            std::fs::File::open(manifest).map_err(read_err)
        }
    }

    /// Pass 1: every line parsed, checked, and put by name into a spool; the digest lengths
    /// that fit several algorithms probed on the first files. None: stopped.
    fn parse(
        &mut self,
        mut file: std::fs::File,
        stop: &Stop,
        notice: &mut dyn FnMut(Notice<'_>),
    ) -> Result<Option<Listed>, VerifyError> {
        let opts = self.opts;
        let manifest = &opts.manifest;
        let hint = manifest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut by_name = Spool::new(&self.temp, opts.memory / 3);
        let mut sample: Vec<Entry> = Vec::new();
        let mut algorithms: Vec<Algorithm> = Vec::new();
        let mut spool_failed: Option<std::io::Error> = None;
        let mut buf = std::mem::take(&mut self.buf);
        let parsed = trawl_manifest::parse_pieces(
            &mut file,
            &opts.prefer,
            &hint,
            PIECE,
            &mut |entries, errors| {
                // A stop ends the reading of the manifest too, however long it is.
                if stop.is_stopping() {
                    return Err(std::io::Error::other("stopped"));
                }
                for e in errors {
                    self.problem(
                        match e {
                            ManifestError::Line { line, reason } => ManifestProblem::Line {
                                manifest: manifest.clone(),
                                line,
                                reason,
                            },
                            ManifestError::Whole(reason) => ManifestProblem::Whole {
                                manifest: manifest.clone(),
                                reason,
                            },
                        },
                        notice,
                    );
                }
                for mut e in entries {
                    if sample.len() < PROBE_SAMPLE {
                        sample.push(e.clone());
                    }
                    for (a, _) in &e.digests {
                        if !algorithms.contains(a) {
                            algorithms.push(*a);
                        }
                    }
                    if e.path.ends_with(b"/") {
                        let reason = format!(
                            "'{}' names a directory, not a file",
                            String::from_utf8_lossy(&e.path)
                        );
                        self.problem(
                            ManifestProblem::Line {
                                manifest: manifest.clone(),
                                line: e.line,
                                reason,
                            },
                            notice,
                        );
                        continue;
                    }
                    e.path = normalize(&e.path);
                    if opts.confine && leaves_root(&e.path) {
                        self.problem(
                            ManifestProblem::LeavesRoot {
                                manifest: manifest.clone(),
                                line: e.line,
                                name: e.path,
                            },
                            notice,
                        );
                        continue;
                    }
                    encode_entry(&e, &mut buf);
                    if let Err(err) = by_name.push(&e.path, &buf) {
                        spool_failed = Some(err);
                        return Err(std::io::Error::other("spool"));
                    }
                }
                Ok(())
            },
        );
        self.buf = buf;
        if let Some(e) = spool_failed {
            return Err(self.spool_err()(e));
        }
        if stop.reason().is_some() {
            return Ok(None);
        }
        let parsed = parsed.map_err(|e| match e {
            PiecesError::Io(source) => VerifyError::Read {
                path: manifest.clone(),
                source,
            },
            PiecesError::Manifest(e) => VerifyError::Unusable {
                path: manifest.clone(),
                reason: e.to_string(),
            },
        })?;
        let mut remap: Vec<(Algorithm, Algorithm)> = Vec::new();
        for assumed in parsed.guessed {
            if let Some(found) = probe(&sample, assumed, &opts.root, opts.confine, stop)
                && found != assumed
            {
                notice(Notice::AlgorithmFound { assumed, found });
                remap.push((assumed, found));
                algorithms.retain(|a| *a != assumed);
                if !algorithms.contains(&found) {
                    algorithms.push(found);
                }
            }
        }
        Ok(Some(Listed {
            by_name,
            algorithms,
            remap,
        }))
    }

    /// Pass 2: one entry per name (the same name listed twice must agree), in name order.
    fn one_per_name(
        &mut self,
        by_name: Spool,
        remap: &[(Algorithm, Algorithm)],
        notice: &mut dyn FnMut(Notice<'_>),
    ) -> Result<Arc<Sorted>, VerifyError> {
        let spool_err = self.spool_err();
        let by_name = Arc::new(by_name.finish().map_err(&spool_err)?);
        let mut unique = Spool::new(&self.temp, self.opts.memory / 3);
        let mut pending: Option<Entry> = None;
        let mut buf = std::mem::take(&mut self.buf);
        let mut flush = |e: Entry, unique: &mut Spool| -> std::io::Result<()> {
            encode_entry(&e, &mut buf);
            unique.push(&e.path, &buf)
        };
        let manifest = &self.opts.manifest;
        let merged = by_name.for_each(|name, v| {
            let mut e = decode_entry(name, v)?;
            for (a, _) in &mut e.digests {
                if let Some((_, found)) = remap.iter().find(|(x, _)| x == a) {
                    *a = *found;
                }
            }
            let Some(prev) = pending.as_mut().filter(|p| p.path == e.path) else {
                if let Some(done) = pending.replace(e) {
                    flush(done, &mut unique)?;
                }
                return Ok(());
            };
            for (alg, d) in e.digests {
                match prev.digests.iter().find(|(a, _)| *a == alg) {
                    Some((_, pd)) if *pd != d => {
                        self.problems += 1;
                        notice(Notice::Manifest(&ManifestProblem::Conflict {
                            manifest: manifest.clone(),
                            line: e.line,
                            first: prev.line,
                            name: e.path.clone(),
                            algorithm: alg,
                        }));
                    }
                    Some(_) => {}
                    None => prev.digests.push((alg, d)),
                }
            }
            Ok::<(), std::io::Error>(())
        });
        merged
            .and_then(|()| match pending.take() {
                Some(e) => flush(e, &mut unique),
                None => Ok(()),
            })
            .map_err(&spool_err)?;
        self.buf = buf;
        Ok(Arc::new(unique.finish().map_err(&spool_err)?))
    }

    /// Pass 3: the files read, fed to the engine as the entries come; each result goes into a
    /// spool by line, so that the report is in manifest order.
    fn read(
        &mut self,
        unique: &Arc<Sorted>,
        algorithms: Vec<Algorithm>,
        progress: &dyn Progress,
        stop: &Stop,
        notice: &mut dyn FnMut(Notice<'_>),
    ) -> Result<Read, VerifyError> {
        let opts = self.opts;
        let root = &opts.root;
        let mut cfg = opts.cfg.clone();
        cfg.roots = vec![root.clone()];
        let in_flight: Mutex<HashMap<PathBuf, Entry>> = Mutex::new(HashMap::new());
        let mut results = Spool::new(&self.temp, opts.memory / 3);
        let mut counts = VerifyCounts::default();
        let mut missing_ignored = 0u64;
        let mut result_err: Option<std::io::Error> = None;
        let mut buf = std::mem::take(&mut self.buf);
        let mut record = |name: &[u8], line: usize, state: VerifyState| {
            if opts.ignore_missing && state == VerifyState::Missing {
                missing_ignored += 1;
                return;
            }
            counts.add(&state);
            encode_result(name, &state, &mut buf);
            if result_err.is_none()
                && let Err(e) = results.push(&(line as u64).to_be_bytes(), &buf)
            {
                result_err = Some(e);
                stop.request(Reason::Failed);
            }
        };
        let lanes = DigestLanes(algorithms);
        // Confined: every name is opened in one step beneath the root (links followed only
        // where they stay beneath); names whose directory is missing or outside are decided
        // here and recorded below.
        let mut beneath =
            match opts.confine {
                true => Some(trawl_scan::beneath::Beneath::open(root).map_err(|e| {
                    VerifyError::Root {
                        path: root.clone(),
                        reason: e.to_string(),
                    }
                })?),
                false => None,
            };
        let decided: Mutex<Vec<(Entry, VerifyState)>> = Mutex::new(Vec::new());
        let fed = std::thread::scope(|s| {
            let (tx, rx) = crossbeam_channel::bounded::<trawl_walk::FileEntry>(IN_FLIGHT);
            let in_flight = &in_flight;
            let decided = &decided;
            let feeder = s.spawn(move || {
                unique.for_each(|name, v| {
                    if stop.is_stopping() {
                        return Ok(());
                    }
                    let e = decode_entry(name, v)?;
                    let path = root.join(OsStr::from_bytes(&e.path));
                    let f = match beneath
                        .as_mut()
                        .map(|b| b.entry_following_inside(&e.path, &path, 0))
                    {
                        None => trawl_walk::FileEntry::named(&path),
                        Some(Ok(f)) => f,
                        Some(Err(why)) => {
                            let st = match why {
                                NotBeneath::Missing => VerifyState::Missing,
                                NotBeneath::Outside => VerifyState::Unreadable(
                                    "leads outside the root through a symbolic link (--confine): not read"
                                        .into(),
                                ),
                            };
                            lock(decided).push((e, st));
                            return Ok(());
                        }
                    };
                    progress.found(1, f.size);
                    lock(in_flight).insert(path, e);
                    // The engine gone (stopped): nothing more to feed.
                    let _ = tx.send(f);
                    Ok::<(), std::io::Error>(())
                })
            });
            trawl_scan::scan(&cfg, Input::Stream(rx), &lanes, progress, stop, &mut |ev| {
                let (path, st) = match ev {
                    Event::File(rec) => {
                        let Some(e) = lock(in_flight).remove(rec.path.as_path()) else {
                            return;
                        };
                        return record(&e.path, e.line, compare(&e, &rec));
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
                if let Some(e) = lock(in_flight).remove(path.as_path()) {
                    record(&e.path, e.line, st);
                }
            });
            feeder
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the feeder panicked")))
        });
        for (e, st) in decided.into_inner().unwrap_or_else(|p| p.into_inner()) {
            record(&e.path, e.line, st);
        }
        // Whatever the engine did not report on (none, unless stopped) was not read.
        let left: Vec<_> = lock(&in_flight).drain().map(|(_, v)| v).collect();
        for e in left {
            record(&e.path, e.line, VerifyState::Unreadable("not read".into()));
        }
        self.buf = buf;
        if let Some(e) = result_err {
            return Err(self.spool_err()(e));
        }
        fed.map_err(self.spool_err())?;
        Ok(Read {
            results,
            counts,
            missing_ignored,
        })
    }
}

/// Bytes a manifest is parsed by.
const PIECE: usize = 1 << 20;
/// Files handed to the engine and not yet reported on, at most (the channel's bound).
const IN_FLIGHT: usize = 256;
/// Entries kept from the top of the manifest for [`probe`].
const PROBE_SAMPLE: usize = 256;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// An entry as a spool keeps it (the name is the key): line, size, digests.
fn encode_entry(e: &Entry, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(e.line as u64).to_le_bytes());
    match e.size {
        Some(s) => {
            out.push(1);
            out.extend_from_slice(&s.to_le_bytes());
        }
        None => out.push(0),
    }
    out.push(e.digests.len() as u8);
    for (a, d) in &e.digests {
        out.push(crate::records::algorithm_code(*a));
        out.push(d.len() as u8);
        out.extend_from_slice(d);
    }
}

fn damaged() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "a spooled entry is damaged",
    )
}

fn decode_entry(name: &[u8], v: &[u8]) -> std::io::Result<Entry> {
    let mut r = Cursor(v);
    let line = u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes")) as usize;
    let size = match r.take(1)?[0] {
        1 => Some(u64::from_le_bytes(r.take(8)?.try_into().expect("8 bytes"))),
        _ => None,
    };
    let n = r.take(1)?[0];
    let mut digests = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let h = r.take(2)?;
        let a = crate::records::algorithm_of(h[0]).ok_or_else(damaged)?;
        let len = h[1] as usize;
        digests.push((a, r.take(len)?.to_vec()));
    }
    Ok(Entry {
        path: name.to_vec(),
        size,
        digests,
        line,
    })
}

/// A result as the results spool keeps it (the line is the key): name, state, detail.
fn encode_result(name: &[u8], state: &VerifyState, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(name.len() as u32).to_le_bytes());
    out.extend_from_slice(name);
    let (code, detail) = match state {
        VerifyState::Ok => (0u8, ""),
        VerifyState::Failed(d) => (1, d.as_str()),
        VerifyState::Missing => (2, ""),
        VerifyState::Unreadable(d) => (3, d.as_str()),
    };
    out.push(code);
    out.extend_from_slice(detail.as_bytes());
}

fn decode_result(v: &[u8]) -> std::io::Result<VerifyEntry> {
    let mut r = Cursor(v);
    let n = u32::from_le_bytes(r.take(4)?.try_into().expect("4 bytes")) as usize;
    let name = r.take(n)?.to_vec();
    let code = r.take(1)?[0];
    let detail = String::from_utf8_lossy(r.0).into_owned();
    let state = match code {
        0 => VerifyState::Ok,
        1 => VerifyState::Failed(detail),
        2 => VerifyState::Missing,
        _ => VerifyState::Unreadable(detail),
    };
    Ok(VerifyEntry {
        name,
        line: 0,
        state,
    })
}

/// Reads a spooled value from the front.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> std::io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(damaged());
        }
        let (h, t) = self.0.split_at(n);
        self.0 = t;
        Ok(h)
    }
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
    // Confined: opened as the read itself opens them, beneath the root.
    let mut beneath = confine
        .then(|| trawl_scan::beneath::Beneath::open(root).ok())
        .flatten();
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
        let opened = match beneath.as_mut() {
            None => trawl_read::open_for_read(&path),
            Some(b) => match b.entry_following_inside(name, &path, 0) {
                Ok(f) => match &f.open {
                    Some(open) => trawl_read::open_for_read_with((open.0)(), &path),
                    None => continue,
                },
                Err(_) => continue,
            },
        };
        let Ok(mut f) = opened.map(|o| o.file) else {
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

/// Every regular file under `root` that no entry names (as manifest names, sorted), except the
/// manifest itself: the walk's names are sorted in a spool and merged with the entries'.
fn unlisted_files(
    root: &Path,
    opts: &trawl_walk::WalkOptions,
    manifest: &Path,
    listed: &Arc<Sorted>,
    temp: &Path,
    memory: usize,
) -> std::io::Result<Vec<Vec<u8>>> {
    let (tx, rx) = crossbeam_channel::bounded(1024);
    let stop = Stop::new();
    // The manifest itself is not an unlisted file; compare by identity, not by name.
    let manifest_id = std::fs::metadata(manifest).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    });
    let roots = vec![root.to_path_buf()];
    let names = crate::names::ManifestNames::new(&roots);
    let mut found = Spool::new(temp, memory);
    std::thread::scope(|s| {
        s.spawn(|| {
            trawl_walk::walk(&roots, opts, &tx, &stop, &|_| {});
            drop(tx);
        });
        for item in rx {
            if let trawl_walk::WalkItem::File(f) = item {
                if manifest_id == Some((f.dev, f.ino)) {
                    continue;
                }
                if let Err(e) = found.push(&names.name(&f.path), &[]) {
                    stop.request(Reason::Failed);
                    return Err(e);
                }
            }
        }
        Ok(())
    })?;
    let found = Arc::new(found.finish()?);
    let mut listed = listed.iter()?;
    let mut next_listed = listed.next_record()?.map(|(k, _)| k.to_vec());
    let mut out = Vec::new();
    found.for_each(|name, _| {
        while next_listed.as_deref().is_some_and(|l| l < name) {
            next_listed = listed.next_record()?.map(|(k, _)| k.to_vec());
        }
        if next_listed.as_deref() != Some(name) {
            out.push(name.to_vec());
        }
        Ok::<(), std::io::Error>(())
    })?;
    Ok(out)
}
