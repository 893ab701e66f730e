//! `trawl audit`: walk into the catalog, read what the plan says through the scan engine, record
//! each verdict as it comes, settle missing and moved files, seal the run, report.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use anyhow::Context;
use crossbeam_channel::bounded;
use trawl_catalog::audit::{PlanFilter, RunSummary};
use trawl_catalog::query::Event as CatEvent;
use trawl_catalog::{AuditMode, Catalog, OpenMode, Verdict};
use trawl_printer::human;
use trawl_printer::json::JsonPath;
use trawl_read::ReadError;
use trawl_scan::{DigestLanes, Event, Input, ScanError};
use trawl_walk::{FileEntry, SkipKind, WalkItem};

use super::output::Output;
use crate::flags::hiargs::AuditPlan;
use crate::stop::STOP;
use crate::{Outcome, messages};

/// How a path is shown: under the root as the user typed it.
pub struct Shown {
    pub roots: Vec<(PathBuf, PathBuf)>,
}

impl Shown {
    pub fn path(&self, p: &Path) -> String {
        for (canon, typed) in &self.roots {
            if let Ok(rel) = p.strip_prefix(canon) {
                return typed
                    .join(rel)
                    .display()
                    .to_string()
                    .escape_debug()
                    .to_string();
            }
        }
        p.display().to_string().escape_debug().to_string()
    }
}

fn rel<'a>(path: &'a Path, root: &Path) -> &'a [u8] {
    path.strip_prefix(root)
        .unwrap_or(path)
        .as_os_str()
        .as_bytes()
}

pub fn run(plan: AuditPlan, typed_roots: &[PathBuf]) -> anyhow::Result<Outcome> {
    let mut json = plan.json.as_deref().map(Output::create).transpose()?;
    let mut cat = Catalog::open(
        &plan.catalog,
        if plan.init {
            OpenMode::Init
        } else {
            OpenMode::Write
        },
    )?;
    let existing = cat.algorithms()?;
    let algorithms = match (&plan.algorithms, existing.is_empty()) {
        (Some(a), true) => a.clone(),
        (None, true) => vec![trawl_digest::Algorithm::Sha256],
        (Some(a), false) if *a != existing => anyhow::bail!(
            "{}: this catalog records {}; --digest {} differs (start a new catalog to change algorithms)",
            plan.catalog.display(),
            names(&existing),
            names(a)
        ),
        (_, false) => existing,
    };
    let own = cat.own_files();
    let roots = plan.cfg.roots.clone();
    let shown = Shown {
        roots: roots
            .iter()
            .cloned()
            .zip(typed_roots.iter().cloned())
            .collect(),
    };
    let mode = if plan.metadata_only {
        AuditMode::Metadata
    } else {
        AuditMode::Full
    };
    let options = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    let start = Instant::now();
    let registered_before = registered_under(&cat, &roots)?;
    let mut audit = cat.begin_audit(&roots, mode, &algorithms, &options)?;
    audit.forget_missing(plan.forget_missing);
    if audit.resumed {
        messages::warning(format_args!(
            "audit run {} was interrupted; resuming it (files it already checked are not read again)",
            audit.run
        ));
    }
    let bar = crate::progress::Bar::new(plan.quiet);
    let mut trouble = false;

    // 1. The walk, into the catalog's walk table.
    let (tx, rx) = bounded::<WalkItem>(16 * 1024);
    let walk_result: anyhow::Result<()> = std::thread::scope(|s| {
        let walk_opts = &plan.cfg.walk;
        let roots = &roots;
        s.spawn(move || trawl_walk::walk(roots, walk_opts, &tx, STOP.flag(), &|_| {}));
        for item in rx {
            match item {
                WalkItem::File(f) => {
                    if own.contains(&(f.dev, f.ino)) {
                        continue;
                    }
                    audit.walk_file(
                        f.root,
                        rel(&f.path, &roots[f.root]),
                        f.size,
                        f.mtime_ns,
                        f.dev,
                        f.ino,
                    )?;
                }
                WalkItem::Skipped { path, kind } => {
                    let Some(root) = roots.iter().position(|r| path.starts_with(r)) else {
                        continue;
                    };
                    if kind != SkipKind::Symlink {
                        messages::warning(format_args!(
                            "{}: skipped: {}",
                            shown.path(&path),
                            kind.describe()
                        ));
                    }
                    let k = if kind == SkipKind::Symlink {
                        "symlink"
                    } else {
                        "special"
                    };
                    audit.walk_other(root, rel(&path, &roots[root]), k)?;
                }
                WalkItem::Error(e) => {
                    trouble = true;
                    messages::error(format_args!("{e}"));
                    if let Some(p) = e.path()
                        && let Some(root) = roots.iter().position(|r| p.starts_with(r))
                    {
                        let r = rel(p, &roots[root]);
                        audit.walk_other(root, r, "dirfail")?;
                        audit.record_unreadable(root, r, &e.to_string())?;
                    }
                }
            }
        }
        Ok(())
    });
    if let Err(e) = walk_result {
        drop(bar);
        return Err(e);
    }
    if STOP.is_stopping() {
        drop(bar);
        audit.interrupt(0, 0)?;
        return Ok(Outcome::Interrupted);
    }

    // 2. The reads, in the plan's order, within the budget.
    let files_read = AtomicU64::new(0);
    let bytes_read = AtomicU64::new(0);
    let mut budget_hit = false;
    let mut deferred_by_age = 0;
    if mode == AuditMode::Full {
        let filter = PlanFilter {
            verified_before: plan
                .older_than
                .map(|d| trawl_catalog::now_secs() - d.as_secs() as i64),
        };
        let (n, bytes, deferred) = audit.plan_totals(filter)?;
        deferred_by_age = deferred;
        let (n, bytes) = match plan.max_bytes {
            Some(m) => (n, bytes.min(m)),
            None => (n, bytes),
        };
        trawl_scan::Progress::found(&bar, n, bytes);
        trawl_scan::Progress::walk_done(&bar);
        let planner = audit.planner(filter)?;
        // Stops the engine on Ctrl-C or on a catalog error (which must not read as an interruption).
        let stop = AtomicBool::new(false);
        let (ftx, frx) = bounded::<FileEntry>(1024);
        let mut db_error: Option<trawl_catalog::CatalogError> = None;
        let hit = AtomicBool::new(false);
        let watcher_done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let stop = &stop;
            let hit = &hit;
            let max_bytes = plan.max_bytes;
            let max_time = plan.max_time;
            let feeder = s.spawn(move || {
                let mut sent = 0u64;
                let r = planner.run(&mut |p| {
                    if stop.load(Ordering::Relaxed) {
                        return false;
                    }
                    if max_bytes.is_some_and(|m| sent >= m)
                        || max_time.is_some_and(|t| start.elapsed() >= t)
                    {
                        hit.store(true, Ordering::Relaxed);
                        return false;
                    }
                    sent += p.size;
                    ftx.send(FileEntry {
                        path: p.path,
                        root: p.root,
                        size: p.size,
                        dev: p.dev,
                        ino: p.ino,
                        mtime_ns: 0,
                    })
                    .is_ok()
                });
                drop(ftx);
                r
            });
            // Ctrl-C reaches the engine through `stop`, like a catalog error does.
            let watcher_done = &watcher_done;
            let watcher = s.spawn(move || {
                while !watcher_done.load(Ordering::Relaxed) {
                    if STOP.is_stopping() {
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            });
            trawl_scan::scan(
                &plan.cfg,
                Input::Stream(frx),
                &DigestLanes(algorithms.clone()),
                &bar,
                stop,
                &mut |ev| {
                    if db_error.is_some() {
                        return;
                    }
                    let r = match ev {
                        Event::File(rec) => {
                            bar.file_done();
                            files_read.fetch_add(1, Ordering::Relaxed);
                            bytes_read.fetch_add(rec.size, Ordering::Relaxed);
                            let digests = rec.digests();
                            audit
                                .record_read(
                                    rec.root,
                                    rel(&rec.path, &roots[rec.root]),
                                    rec.size,
                                    rec.mtime_sec * 1_000_000_000 + rec.mtime_nsec,
                                    rec.dev,
                                    rec.ino,
                                    &digests,
                                )
                                .map(|(v, _)| {
                                    if v == Verdict::Corrupt {
                                        messages::error(format_args!(
                                            "{}: CORRUPT: content changed but size and mtime did not",
                                            shown.path(&rec.path)
                                        ));
                                    }
                                })
                        }
                        Event::Failed(ScanError::Read(ReadError::Vanished { path, .. })) => {
                            bar.file_done();
                            match roots.iter().position(|r| path.starts_with(r)) {
                                Some(i) => audit.record_gone(i, rel(&path, &roots[i])),
                                None => Ok(()),
                            }
                        }
                        Event::Failed(e) => {
                            bar.file_done();
                            trouble = true;
                            messages::error(format_args!("{e}"));
                            match e.path().and_then(|p| {
                                roots.iter().position(|r| p.starts_with(r)).map(|i| (p, i))
                            }) {
                                Some((p, i)) => {
                                    audit.record_unreadable(i, rel(p, &roots[i]), &e.to_string())
                                }
                                None => Ok(()),
                            }
                        }
                        Event::Skipped { .. } => Ok(()),
                    };
                    if let Err(e) = r {
                        db_error = Some(e);
                        stop.store(true, Ordering::SeqCst);
                    }
                },
            );
            watcher_done.store(true, Ordering::Relaxed);
            let _ = watcher.join();
            // The engine has stopped reading: release a feeder blocked on a full channel.
            stop.store(true, Ordering::Relaxed);
            match feeder.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) if db_error.is_none() => db_error = Some(e),
                Ok(Err(_)) => {}
                Err(p) => std::panic::resume_unwind(p),
            }
        });
        budget_hit = hit.load(Ordering::Relaxed);
        let (fr, br) = (
            files_read.load(Ordering::Relaxed),
            bytes_read.load(Ordering::Relaxed),
        );
        if let Some(e) = db_error {
            drop(bar);
            let _ = audit.interrupt(fr, br);
            return Err(anyhow::Error::new(e).context(
                "the audit stopped; the catalog keeps everything recorded before this, and the next audit resumes",
            ));
        }
        if STOP.is_stopping() {
            drop(bar);
            audit.interrupt(fr, br)?;
            return Ok(Outcome::Interrupted);
        }
    }
    drop(bar);

    // 3. Missing and moved, then the seal.
    audit.settle(!budget_hit)?;
    let status = if budget_hit { "partial" } else { "complete" };
    let summary = audit.seal(
        status,
        files_read.load(Ordering::Relaxed),
        bytes_read.load(Ordering::Relaxed),
    )?;
    let elapsed = start.elapsed().as_secs_f64();
    let rss = super::peak_rss();

    // 4. The report, streamed from the catalog.
    let registration = registered_before == 0;
    let mut out = std::io::stdout().lock();
    let to_stdout = !plan.quiet && json.as_ref().is_none_or(|_| !is_stdout(&plan.json));
    if to_stdout {
        cat.for_each_event(summary.id, &mut |ev| {
            if registration && ev.verdict == Verdict::New {
                return;
            }
            let _ = writeln!(out, "{}", event_line(&ev, &shown));
        })?;
    }
    if let Some(j) = json.as_mut() {
        write_json(j, &cat, &summary, &plan, &algorithms, elapsed, rss)
            .with_context(|| format!("{}: cannot write", j.name()))?;
    }
    if let Some(j) = json.take() {
        j.commit()?;
    }
    if !plan.quiet {
        let s = summary_text(
            &summary,
            registration,
            elapsed,
            rss,
            budget_hit,
            deferred_by_age,
            &plan.catalog,
        );
        if to_stdout {
            out.write_all(s.as_bytes())?;
        } else {
            eprint!("{s}");
        }
    }
    let bad = summary.count(Verdict::Corrupt) + summary.count(Verdict::Missing) > 0;
    Ok(if bad {
        Outcome::Difference
    } else if trouble || summary.count(Verdict::Unreadable) > 0 {
        Outcome::Trouble
    } else {
        Outcome::Ok
    })
}

fn is_stdout(p: &Option<PathBuf>) -> bool {
    p.as_ref().is_some_and(|p| p.as_os_str() == "-")
}

fn names(a: &[trawl_digest::Algorithm]) -> String {
    a.iter().map(|a| a.name()).collect::<Vec<_>>().join(",")
}

fn registered_under(cat: &Catalog, roots: &[PathBuf]) -> anyhow::Result<i64> {
    let mut n = 0;
    for (id, path) in cat.roots()? {
        if roots.contains(&path) {
            n += cat.connection().query_row(
                "SELECT count(*) FROM files WHERE root = ?1",
                [id],
                |r| r.get::<_, i64>(0),
            )?;
        }
    }
    Ok(n)
}

/// `corrupt     path: detail`
pub fn event_line(ev: &CatEvent, shown: &Shown) -> String {
    let mut s = format!("{:<11} {}", ev.verdict.name(), shown.path(&ev.path));
    match (&ev.verdict, &ev.other_path) {
        (Verdict::Moved, Some(from)) => s.push_str(&format!(" (moved from {})", shown.path(from))),
        _ => {
            if let Some(d) = &ev.detail {
                s.push_str(": ");
                s.push_str(d);
            }
        }
    }
    s
}

fn summary_text(
    s: &RunSummary,
    registration: bool,
    elapsed: f64,
    rss: Option<u64>,
    budget_hit: bool,
    deferred_by_age: u64,
    catalog: &Path,
) -> String {
    let mut t = String::new();
    t.push_str(&format!(
        "audit run {} ({}, {}): {} files, {} read in {:.2} s ({})\n",
        s.id,
        s.mode,
        s.status,
        s.files_read,
        human::bytes(s.bytes_read),
        elapsed,
        human::rate(s.bytes_read, elapsed)
    ));
    if registration {
        t.push_str(&format!(
            "registered {} files in {}\n",
            s.count(Verdict::New),
            catalog.display()
        ));
    }
    let counts: Vec<String> = s
        .counts
        .iter()
        .map(|(v, n)| format!("{} {n}", v.name()))
        .collect();
    t.push_str(&counts.join(", "));
    t.push('\n');
    if s.deferred > 0 {
        let why = if budget_hit {
            "the budget (--max-bytes/--max-time) ran out; the next audit goes on from here"
        } else {
            "verified recently enough (--older-than)"
        };
        let _ = deferred_by_age;
        t.push_str(&format!(
            "not read this time: {} files ({why})\n",
            s.deferred
        ));
    }
    let corrupt = s.count(Verdict::Corrupt);
    if corrupt > 0 {
        t.push_str(&format!(
            "CORRUPT: {corrupt} file{} changed content while size and mtime stayed the same: silent corruption; restore from a good copy\n",
            if corrupt == 1 { "" } else { "s" }
        ));
    }
    let missing = s.count(Verdict::Missing);
    if missing > 0 {
        t.push_str(&format!(
            "MISSING: {missing} registered file{} no longer there\n",
            if missing == 1 { "" } else { "s" }
        ));
    }
    if let Some(c) = &s.chain_digest {
        t.push_str(&format!("catalog head: run {} {}\n", s.id, hex::encode(c)));
    }
    if let Some(r) = rss {
        t.push_str(&format!("peak memory: {}\n", human::bytes(r)));
    }
    t
}

fn digests_json(algs: &[trawl_digest::Algorithm], d: &Option<Vec<u8>>) -> serde_json::Value {
    let Some(d) = d else {
        return serde_json::Value::Null;
    };
    let mut m = serde_json::Map::new();
    let mut off = 0;
    for a in algs {
        let n = a.output_len();
        if off + n <= d.len() {
            m.insert(a.name().into(), hex::encode(&d[off..off + n]).into());
        }
        off += n;
    }
    m.into()
}

/// The audit's JSON, streamed: the events are written one by one from the catalog.
fn write_json(
    out: &mut Output,
    cat: &Catalog,
    s: &RunSummary,
    plan: &AuditPlan,
    algs: &[trawl_digest::Algorithm],
    elapsed: f64,
    rss: Option<u64>,
) -> anyhow::Result<()> {
    let mut counts = serde_json::Map::new();
    for (v, n) in &s.counts {
        counts.insert(v.name().into(), (*n).into());
    }
    let head = serde_json::json!({
        "schema_version": trawl_printer::json::SCHEMA_VERSION,
        "trawl_version": env!("CARGO_PKG_VERSION"),
        "catalog": JsonPath::new(&plan.catalog),
        "run": s.id,
        "mode": s.mode,
        "status": s.status,
        "roots": plan.cfg.roots.iter().map(|r| JsonPath::new(r)).collect::<Vec<_>>(),
        "algorithms": algs.iter().map(|a| a.name()).collect::<Vec<_>>(),
        "counts": counts,
        "not_read": s.deferred,
        "files_read": s.files_read,
        "bytes_read": s.bytes_read,
        "seconds": elapsed,
        "peak_rss_bytes": rss,
        "chain_digest": s.chain_digest.as_ref().map(hex::encode),
    });
    let text = serde_json::to_string_pretty(&head)?;
    // Reopen the object to append the events array.
    out.write_all(&text.as_bytes()[..text.len() - 2])?;
    out.write_all(b",\n  \"events\": [")?;
    let mut first = true;
    let mut err: Option<std::io::Error> = None;
    cat.for_each_event(s.id, &mut |ev| {
        if err.is_some() {
            return;
        }
        let v = serde_json::json!({
            "state": ev.verdict.name(),
            "path": JsonPath::new(&ev.path),
            "size": ev.size,
            "expected": digests_json(algs, &ev.expected),
            "actual": digests_json(algs, &ev.actual),
            "moved_from": ev.other_path.as_ref().map(|p| JsonPath::new(p)),
            "detail": ev.detail,
        });
        let r = out
            .write_all(if first { b"\n    " } else { b",\n    " })
            .and_then(|()| serde_json::to_writer(&mut *out, &v).map_err(std::io::Error::from));
        first = false;
        if let Err(e) = r {
            err = Some(e);
        }
    })?;
    if let Some(e) = err {
        return Err(e.into());
    }
    out.write_all(b"\n  ]\n}\n")?;
    Ok(())
}
