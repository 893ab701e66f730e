//! The three passes of a verification, each over a spool: the manifest parsed by name, one
//! entry per name, the files read in name order with each result kept by manifest line.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use trawl_digest::Algorithm;
use trawl_manifest::{Entry, ManifestError, PiecesError};
use trawl_report::{VerifyCounts, VerifyState};
use trawl_scan::{
    DigestLanes, Links, LocalRoots, Outcome, Progress, Reading, Resolve, ScanError, Source,
    read_named,
};
use trawl_spool::{Sorted, Spool};
use trawl_stop::{Reason, Stop};

use super::*;

/// What the passes share: the options, where spools go, the manifest's problems counted (and
/// of them the malformed lines), and one buffer entries are encoded in.
pub(crate) struct Passes<'a> {
    pub(crate) opts: &'a VerifyOptions,
    pub(crate) temp: PathBuf,
    pub(crate) problems: usize,
    pub(crate) malformed: usize,
    pub(crate) buf: Vec<u8>,
}

/// The manifest's entries by name, the algorithms to compute, and where the manifest's digest
/// lengths fit several: the algorithms a probe settled (assumed, found), and the ones it did
/// not, with why their entries are not verified.
pub(crate) struct Listed {
    pub(crate) by_name: Spool,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) settled: Vec<(Algorithm, Algorithm)>,
    pub(crate) unsettled: Vec<(Algorithm, String)>,
}

/// The files read: every entry's state, by manifest line, and the counts.
pub(crate) struct Read {
    pub(crate) results: Spool,
    pub(crate) counts: VerifyCounts,
    pub(crate) missing_ignored: u64,
}

impl Passes<'_> {
    pub(crate) fn spool_err(&self) -> impl Fn(std::io::Error) -> VerifyError + use<> {
        let dir = self.temp.clone();
        move |source| VerifyError::Spool {
            dir: dir.clone(),
            source,
        }
    }

    pub(crate) fn problem(&mut self, p: ManifestProblem, notice: &mut dyn FnMut(Notice<'_>)) {
        self.problems += 1;
        self.malformed += usize::from(p.is_malformed());
        notice(Notice::Manifest(&p));
    }

    /// The manifest, opened; one on stdin is copied to an unnamed temporary file first (it is
    /// read twice).
    pub(crate) fn open_manifest(&self) -> Result<std::fs::File, VerifyError> {
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
    pub(crate) fn parse(
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
        let mut listing = Listing {
            by_name: Spool::new(&self.temp, opts.memory / 3),
            sample: Vec::new(),
            algorithms: Vec::new(),
            failed: None,
            buf: std::mem::take(&mut self.buf),
        };
        let parsed = trawl_manifest::parse_pieces(
            &mut file,
            &opts.prefer,
            &hint,
            PIECE,
            &mut |entries, errors| {
                // A stop ends the reading of the manifest too, however long it is.
                if stop.is_stopping() {
                    return ControlFlow::Break(());
                }
                for e in errors {
                    self.problem(problem_of(manifest, e), notice);
                }
                for e in entries {
                    self.list(&mut listing, e, notice)?;
                }
                ControlFlow::Continue(())
            },
        );
        self.buf = std::mem::take(&mut listing.buf);
        if let Some(e) = listing.failed.take() {
            return Err(self.spool_err()(e));
        }
        if stop.reason().is_some() {
            return Ok(None);
        }
        // A break is the stop or the spool's failure, both answered above.
        let ControlFlow::Continue(parsed) = parsed.map_err(|e| unreadable(manifest, e))? else {
            return Ok(None);
        };
        Ok(Some(settle(opts, listing, &parsed.guessed, stop, notice)))
    }

    /// One parsed entry: kept for the probe where its algorithm was guessed, checked, and put
    /// by name into the spool (`Break`: the spool failed).
    fn list(
        &mut self,
        listing: &mut Listing,
        mut e: Entry,
        notice: &mut dyn FnMut(Notice<'_>),
    ) -> ControlFlow<()> {
        let opts = self.opts;
        let manifest = &opts.manifest;
        if e.guessed && listing.sample.len() < PROBE_SAMPLE {
            listing.sample.push(e.clone());
        }
        for (a, _) in &e.digests {
            if !e.guessed && !listing.algorithms.contains(a) {
                listing.algorithms.push(*a);
            }
        }
        if e.path.ends_with(b"/") {
            let (line, name) = (e.line, e.path);
            let manifest = manifest.clone();
            self.problem(
                ManifestProblem::Directory {
                    manifest,
                    line,
                    name,
                },
                notice,
            );
            return ControlFlow::Continue(());
        }
        e.path = normalize(&e.path);
        if opts.confine && leaves_root(&e.path) {
            let (line, name) = (e.line, e.path);
            let manifest = manifest.clone();
            self.problem(
                ManifestProblem::LeavesRoot {
                    manifest,
                    line,
                    name,
                },
                notice,
            );
            return ControlFlow::Continue(());
        }
        encode_entry(&e, &mut listing.buf);
        if let Err(err) = listing.by_name.push(&e.path, &listing.buf) {
            listing.failed = Some(err);
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// Pass 2: the entries by name, in rounds: the first round has one entry per name (the
    /// lines that agree merged into it); a line that gives a name another digest than an
    /// earlier line did is judged on its own, as `sha256sum -c` judges every line: it goes to
    /// the next round (a name's k-th disagreeing line to round k), whose files are read again.
    /// A guessed algorithm is replaced by the one its probe settled (`settled`: assumed,
    /// found); a line whose algorithm is still unsettled, or that cannot be verified, is
    /// judged on its own too, never merged into another's verdict.
    pub(crate) fn one_per_name(
        &mut self,
        by_name: Spool,
        settled: &[(Algorithm, Algorithm)],
    ) -> Result<Vec<Arc<Sorted>>, VerifyError> {
        let spool_err = self.spool_err();
        let by_name = Arc::new(by_name.finish().map_err(&spool_err)?);
        let (temp, memory) = (self.temp.clone(), self.opts.memory / 3);
        let mut rounds: Vec<Spool> = vec![Spool::new(&temp, memory)];
        let mut pending: Option<Entry> = None;
        // The disagreeing lines of the current name so far.
        let mut others = 0usize;
        let mut buf = std::mem::take(&mut self.buf);
        let mut flush = |e: &Entry, round: usize, rounds: &mut Vec<Spool>| -> std::io::Result<()> {
            while rounds.len() <= round {
                rounds.push(Spool::new(&temp, memory));
            }
            encode_entry(e, &mut buf);
            rounds[round].push(&e.path, &buf)
        };
        let merged = by_name.for_each(|name, v| {
            let mut e = decode_entry(name, v)?;
            settle_entry(&mut e, settled);
            let Some(prev) = pending.as_mut().filter(|p| p.path == e.path) else {
                if let Some(done) = pending.replace(e) {
                    flush(&done, 0, &mut rounds)?;
                }
                others = 0;
                return Ok(());
            };
            if disagree(prev, &e) {
                others += 1;
                return flush(&e, others, &mut rounds);
            }
            for (alg, d) in e.digests {
                if !prev.digests.iter().any(|(a, _)| *a == alg) {
                    prev.digests.push((alg, d));
                }
            }
            Ok::<(), std::io::Error>(())
        });
        merged
            .and_then(|()| match pending.take() {
                Some(e) => flush(&e, 0, &mut rounds),
                None => Ok(()),
            })
            .map_err(&spool_err)?;
        self.buf = buf;
        rounds
            .into_iter()
            .map(|r| r.finish().map(Arc::new).map_err(&spool_err))
            .collect()
    }

    /// Pass 3: the files read through trawl-scan's reading service, round by round (see
    /// `one_per_name`: a name is in flight once at a time); each result goes into a spool by
    /// line, so that the report is in manifest order.
    pub(crate) fn read(
        &mut self,
        rounds: &[Arc<Sorted>],
        algorithms: Vec<Algorithm>,
        unsettled: &[(Algorithm, String)],
        progress: &dyn Progress,
        stop: &Stop,
        notice: &mut dyn FnMut(Notice<'_>),
    ) -> Result<Read, VerifyError> {
        let opts = self.opts;
        let mut cfg = opts.cfg.clone();
        cfg.roots = vec![opts.root.clone()];
        let local;
        let source: &dyn Source = match &opts.objects {
            Some(objects) => &**objects,
            None => {
                local = source(opts)?;
                &local
            }
        };
        let lanes = DigestLanes(algorithms);
        let reading = Reading {
            source,
            cfg: &cfg,
            lanes: &lanes,
            cap: None,
            announce: true,
        };
        let mut rec = Recorder {
            ignore_missing: opts.ignore_missing,
            results: Spool::new(&self.temp, opts.memory / 3),
            counts: VerifyCounts::default(),
            missing_ignored: 0,
            failed: None,
            buf: std::mem::take(&mut self.buf),
            stop,
        };
        let round = Round {
            reading: &reading,
            follow: !opts.confine,
            unsettled,
            progress,
            stop,
        };
        for unique in rounds {
            round
                .read(unique, notice, &mut rec)
                .map_err(self.spool_err())?;
            // A result that could not be kept stops the run (see `Recorder::record`).
            if stop.is_stopping() {
                break;
            }
        }
        self.buf = rec.buf;
        if let Some(e) = rec.failed {
            return Err(self.spool_err()(e));
        }
        Ok(Read {
            results: rec.results,
            counts: rec.counts,
            missing_ignored: rec.missing_ignored,
        })
    }
}

/// Where pass 3 reads: confined, every name opened in one step beneath the root (links
/// followed only where they stay beneath); otherwise by its path, as sha256sum opens it.
fn source(opts: &VerifyOptions) -> Result<LocalRoots, VerifyError> {
    let root = &opts.root;
    let links = match opts.confine {
        true => {
            trawl_scan::RelativeEntries::open(root).map_err(|e| VerifyError::Root {
                path: root.clone(),
                reason: e.to_string(),
            })?;
            Links::FollowInside
        }
        false => Links::Follow,
    };
    Ok(LocalRoots::new(vec![root.clone()], links))
}

/// The results as they come: each entry's state kept by its manifest line, and counted.
struct Recorder<'a> {
    ignore_missing: bool,
    results: Spool,
    counts: VerifyCounts,
    missing_ignored: u64,
    /// The first result that could not be kept (the run was stopped then).
    failed: Option<std::io::Error>,
    buf: Vec<u8>,
    stop: &'a Stop,
}

impl Recorder<'_> {
    fn record(&mut self, e: &Entry, state: VerifyState) {
        if self.ignore_missing && state == VerifyState::Missing {
            self.missing_ignored += 1;
            return;
        }
        self.counts.add(&state);
        encode_result(&e.path, &state, &mut self.buf);
        if self.failed.is_none()
            && let Err(err) = self.results.push(&(e.line as u64).to_be_bytes(), &self.buf)
        {
            self.failed = Some(err);
            self.stop.request(Reason::Failed);
        }
    }
}

/// What every round of pass 3 reads with.
struct Round<'a> {
    reading: &'a Reading<'a>,
    /// Names opened by their path, links followed wherever they lead (not confined).
    follow: bool,
    unsettled: &'a [(Algorithm, String)],
    progress: &'a dyn Progress,
    stop: &'a Stop,
}

impl Round<'_> {
    /// One round's files read: its entries fed from a thread of their own as the spool gives
    /// them, each outcome recorded by its line; those decided without a read (nothing to
    /// compare with) recorded after.
    fn read(
        &self,
        unique: &Arc<Sorted>,
        notice: &mut dyn FnMut(Notice<'_>),
        rec: &mut Recorder<'_>,
    ) -> std::io::Result<()> {
        let decided: Mutex<Vec<(Entry, VerifyState)>> = Mutex::new(Vec::new());
        let mut looked_up = self.reading.source.resolver();
        let (stop, decided_ref, follow) = (self.stop, &decided, self.follow);
        let fed = read_named(
            self.reading,
            self.progress,
            stop,
            move |f| {
                unique.for_each_until(|name, v| {
                    // A stop ends the feeding: the names not yet sent are not reported on.
                    if stop.is_stopping() {
                        return Ok(ControlFlow::Break(()));
                    }
                    let e = decode_entry(name, v)?;
                    if let Some(why) = e.unverifiable.clone() {
                        let st = unverified(&mut *looked_up, name, why, follow);
                        lock(decided_ref).push((e, st));
                        return Ok(ControlFlow::Continue(()));
                    }
                    // The engine gone (stopped): nothing more to feed.
                    Ok::<_, std::io::Error>(f.send(0, name, e))
                })
            },
            |e, o| {
                let st = state_of(&e, o, self.unsettled, notice);
                rec.record(&e, st);
            },
        );
        for (e, st) in decided.into_inner().unwrap_or_else(|p| p.into_inner()) {
            rec.record(&e, st);
        }
        fed.map(|_| ())
    }
}

/// An entry with nothing to compare with, looked for (beneath the root where confined) and
/// not read.
fn unverified(looked_up: &mut dyn Resolve, name: &[u8], why: String, follow: bool) -> VerifyState {
    match looked_up.entry(0, name) {
        Err(decided) => decided_state(decided),
        Ok(f)
            if follow
                && std::fs::metadata(&f.path)
                    .is_err_and(|x| x.kind() == std::io::ErrorKind::NotFound) =>
        {
            VerifyState::Missing
        }
        Ok(_) => VerifyState::Unverified(why),
    }
}

/// An entry's state from what became of its file.
fn state_of(
    e: &Entry,
    o: Outcome,
    unsettled: &[(Algorithm, String)],
    notice: &mut dyn FnMut(Notice<'_>),
) -> VerifyState {
    match o {
        Outcome::Read(rec) => compare(e, &rec, unsettled),
        Outcome::Failed(ScanError::Read(r)) => VerifyState::Unreadable(r.reason()),
        // A failure that is not the file's read: told, and the file not read.
        Outcome::Failed(other) => {
            notice(Notice::Failed(&other));
            VerifyState::Unreadable("not read".into())
        }
        o => decided_state(o),
    }
}

/// The state of a file that was not read: missing, refused (by its reason), or not reached.
fn decided_state(o: Outcome) -> VerifyState {
    match o {
        Outcome::Gone(_) => VerifyState::Missing,
        Outcome::Refused { why, .. } => VerifyState::Unreadable(why.to_string()),
        Outcome::Read(_) | Outcome::Failed(_) | Outcome::Unread(_) => {
            VerifyState::Unreadable("not read".into())
        }
    }
}

/// A guessed algorithm replaced by the one its probe settled (`settled`: assumed, found).
fn settle_entry(e: &mut Entry, settled: &[(Algorithm, Algorithm)]) {
    if e.guessed {
        for (a, _) in &mut e.digests {
            if let Some((_, found)) = settled.iter().find(|(x, _)| x == a) {
                *a = *found;
                e.guessed = false;
            }
        }
    }
}

/// Whether two lines of one name are judged apart: either's algorithm unsettled, either
/// unverifiable, or a digest of one algorithm that differs.
fn disagree(prev: &Entry, e: &Entry) -> bool {
    let alone = |x: &Entry| x.guessed || x.unverifiable.is_some();
    alone(prev)
        || alone(e)
        || e.digests
            .iter()
            .any(|(alg, d)| prev.digests.iter().any(|(a, pd)| a == alg && pd != d))
}

/// Pass 1 under way: the spool entries go to by name, the entries kept for the probe, the
/// algorithms the entries name (a guessed one waits for the probe), the spool's failure if it
/// had one, and the buffer entries are encoded in.
struct Listing {
    by_name: Spool,
    sample: Vec<Entry>,
    algorithms: Vec<Algorithm>,
    failed: Option<std::io::Error>,
    buf: Vec<u8>,
}

/// Pass 1's end: the digest lengths that fit several algorithms (`guessed`) probed on the
/// sample, and the algorithms to compute with what the probe found.
fn settle(
    opts: &VerifyOptions,
    listing: Listing,
    guessed: &[Algorithm],
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
) -> Listed {
    let Listing {
        by_name,
        sample,
        mut algorithms,
        ..
    } = listing;
    let (settled, unsettled) = probed(opts, guessed, &sample, stop, notice);
    // What the entries guessed to be of an algorithm need: the one settled, or the one
    // assumed (a file matching it is OK, whatever the probe saw).
    let guessed_need = settled
        .iter()
        .map(|(_, found)| *found)
        .chain(unsettled.iter().copied());
    for a in guessed_need {
        if !algorithms.contains(&a) {
            algorithms.push(a);
        }
    }
    let unsettled = unsettled
        .into_iter()
        .map(|a| (a, unsettled_reason(a)))
        .collect();
    Listed {
        by_name,
        algorithms,
        settled,
        unsettled,
    }
}

/// Bytes a manifest is parsed by.
pub(crate) const PIECE: usize = 1 << 20;
/// Entries kept from the top of the manifest for [`probe`].
pub(crate) const PROBE_SAMPLE: usize = 256;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where the manifest's digest lengths fit several algorithms: the ones the first files
/// settle (assumed, found), and the ones they do not, each said where it is news (a found
/// algorithm other than the one assumed, or none).
fn probed(
    opts: &VerifyOptions,
    guessed: &[Algorithm],
    sample: &[Entry],
    stop: &Stop,
    notice: &mut dyn FnMut(Notice<'_>),
) -> (Vec<(Algorithm, Algorithm)>, Vec<Algorithm>) {
    let (mut settled, mut unsettled) = (Vec::new(), Vec::new());
    for &assumed in guessed {
        match probe(sample, assumed, &opts.root, opts.confine, stop) {
            Probed::Settled(found) => {
                if found != assumed {
                    notice(Notice::AlgorithmFound { assumed, found });
                }
                settled.push((assumed, found));
            }
            Probed::Unsettled { read, matched } => {
                notice(Notice::AlgorithmUnsettled {
                    assumed,
                    read,
                    matched,
                });
                unsettled.push(assumed);
            }
        }
    }
    (settled, unsettled)
}

/// A manifest's line problem, or its problem as a whole, naming the manifest.
fn problem_of(manifest: &Path, e: ManifestError) -> ManifestProblem {
    match e {
        ManifestError::Line { line, reason } => ManifestProblem::Line {
            manifest: manifest.to_path_buf(),
            line,
            reason,
        },
        ManifestError::TooLong { line } => ManifestProblem::TooLong {
            manifest: manifest.to_path_buf(),
            line,
        },
        ManifestError::Whole(reason) => ManifestProblem::Whole {
            manifest: manifest.to_path_buf(),
            reason,
        },
    }
}

/// A manifest that could not be read, or read as one.
fn unreadable(manifest: &Path, e: PiecesError) -> VerifyError {
    match e {
        PiecesError::Io(source) => VerifyError::Read {
            path: manifest.to_path_buf(),
            source,
        },
        PiecesError::Manifest(e) => VerifyError::Unusable {
            path: manifest.to_path_buf(),
            reason: e.to_string(),
        },
    }
}
