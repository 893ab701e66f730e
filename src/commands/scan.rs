//! `trawl scan`: one read pass, digests, manifests, JSON, summary.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use trawl_digest::Algorithm;
use trawl_manifest::{Entry, Format, Style};
use trawl_media::MediaOutput;
use trawl_printer::human;
use trawl_printer::json::{ErrorJson, FileJson, JsonPath, ScanReport, Totals};
use trawl_scan::{Event, FileRecord, Input, LaneOutput};

use super::lanes::ScanLanes;
use trawl_walk::SkipKind;

use super::output::Output;
use crate::flags::hiargs::ScanPlan;
use crate::stop::{Reason, STOP};
use crate::{Outcome, messages};

/// The name a file gets in manifests: relative to the root for a single directory root, else the
/// path as walked; never with a leading `./`.
pub fn manifest_name(path: &Path, roots: &[PathBuf], root: usize) -> Vec<u8> {
    let r = &roots[root];
    let rel = if roots.len() == 1 && r.is_dir() {
        path.strip_prefix(r).unwrap_or(path)
    } else {
        path
    };
    let mut b = rel.as_os_str().as_bytes();
    while let Some(rest) = b.strip_prefix(b"./") {
        b = rest;
    }
    b.to_vec()
}

/// Where a file's keyframe index goes under `--media-index DIR`: always a relative path of
/// plain names, so that it lands under DIR whatever the roots look like (`../x`, `/abs`). With
/// one directory root it is the path below that root; otherwise each root gets its own
/// `N-NAME` (its position among the roots and its last name), so that equal names from two roots
/// do not collide.
pub fn media_index_name(path: &Path, roots: &[PathBuf], root: usize) -> PathBuf {
    use std::path::Component;
    let r = &roots[root];
    let below = path.strip_prefix(r).unwrap_or(Path::new(""));
    let plain = |p: &Path| -> PathBuf {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect()
    };
    let mut out = if roots.len() == 1 && r.is_dir() {
        PathBuf::new()
    } else {
        let last = r
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .next_back()
            .unwrap_or_else(|| "root".into());
        PathBuf::from(format!("{}-{last}", root + 1))
    };
    let below = plain(below);
    if !below.as_os_str().is_empty() {
        out.push(below);
    }
    let mut name = out.into_os_string();
    name.push(".keyframes.json");
    PathBuf::from(name)
}

pub fn file_json(rec: &FileRecord) -> FileJson {
    let mut digests = serde_json::Map::new();
    for (a, d) in rec.outputs.iter().filter_map(LaneOutput::digest) {
        digests.insert(a.name().to_string(), hex::encode(d).into());
    }
    FileJson {
        path: JsonPath::new(&rec.path),
        size: Some(rec.size),
        mtime: Some(rec.mtime_sec as f64 + rec.mtime_nsec as f64 / 1e9),
        digests,
        skipped: None,
        error: None,
        flv: rec
            .outputs
            .iter()
            .find_map(|o| o.other::<MediaOutput>().and_then(Option::as_ref))
            .map(flv_summary),
    }
}

/// What a scan's JSON says of an FLV file (the full index goes to --media-index).
fn flv_summary(m: &Result<trawl_media::FlvIndex, String>) -> serde_json::Value {
    match m {
        Ok(i) => serde_json::json!({
            "duration": i.duration,
            "video_codec": i.video_codec,
            "audio_codec": i.audio_codec,
            "width": i.width.or(i.coded_width.map(f64::from)),
            "height": i.height.or(i.coded_height.map(f64::from)),
            "keyframes": i.keyframes.len(),
            "first_keyframe": i.keyframes.first(),
            "last_keyframe": i.keyframes.last(),
            "tags": i.tags,
            "problems": i.problems,
        }),
        Err(e) => serde_json::json!({ "error": e }),
    }
}

fn problem_json(
    path: Option<&Path>,
    skipped: Option<SkipKind>,
    error: Option<(&str, String)>,
) -> FileJson {
    FileJson {
        path: JsonPath::new(path.unwrap_or(Path::new(""))),
        size: None,
        mtime: None,
        digests: Default::default(),
        skipped: skipped.map(|k| k.name().to_string()),
        error: error.map(|(k, m)| ErrorJson {
            kind: k.to_string(),
            message: m,
        }),
        flv: None,
    }
}

pub fn run(plan: ScanPlan) -> anyhow::Result<Outcome> {
    // Open every destination first: a typo in an output path must not cost a full read.
    let mut manifests: Vec<(Format, Output)> = Vec::new();
    for m in &plan.manifests {
        manifests.push((m.format.clone(), Output::create(&m.path)?));
    }
    let mut json = plan.json.as_deref().map(Output::create).transpose()?;
    let mut jsonl = plan.jsonl.as_deref().map(Output::create).transpose()?;
    let stdout_taken = plan.manifests.iter().any(|m| m.path.as_os_str() == "-")
        || [&plan.json, &plan.jsonl]
            .iter()
            .any(|p| p.as_ref().is_some_and(|p| p.as_os_str() == "-"));

    // Our own temporary outputs may sit inside the scanned tree: they are not part of it.
    let own: Vec<(u64, u64)> = manifests
        .iter()
        .map(|(_, o)| o)
        .chain(json.iter())
        .chain(jsonl.iter())
        .filter_map(Output::identity)
        .collect();
    let bar = crate::progress::Bar::new(plan.quiet);
    let start = Instant::now();
    let mut records: Vec<FileRecord> = Vec::new();
    let mut skipped: Vec<(PathBuf, SkipKind)> = Vec::new();
    let mut failed: Vec<FileJson> = Vec::new();
    let mut failed_lines: Vec<String> = Vec::new();
    let mut jsonl_err: Option<std::io::Error> = None;
    let mut emit = |fj: &FileJson| {
        if let (Some(out), None) = (jsonl.as_mut(), jsonl_err.as_ref()) {
            let r = serde_json::to_writer(&mut *out, fj)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"));
            if let Err(e) = r {
                jsonl_err = Some(e);
                STOP.request(Reason::Error);
            }
        }
    };
    let reduce_cfg = plan.reduce.clone().map(std::sync::Arc::new);
    let acc = reduce_cfg
        .clone()
        .map(|c| std::sync::Arc::new(std::sync::Mutex::new(trawl_reduce::Accumulator::new(c))));
    let mut spill_err: Option<std::io::Error> = None;
    let lanes = ScanLanes {
        digests: plan.algorithms.clone(),
        reduce: reduce_cfg,
        accumulator: acc.clone(),
        media: plan.media,
    };
    trawl_scan::scan(
        &plan.cfg,
        Input::Walk,
        &lanes,
        &bar,
        STOP.flag(),
        &mut |ev| match ev {
            Event::File(rec) if own.contains(&(rec.dev, rec.ino)) => {}
            Event::File(mut rec) => {
                bar.file_done();
                // Fold the reduction facts in now; the record keeps only its digests.
                rec.outputs.retain(|o| {
                    if let Some(fr) = o.other::<trawl_reduce::FileReduce>() {
                        if let (Some(acc), None) = (acc.as_ref(), spill_err.as_ref())
                            && let Err(e) = acc.lock().unwrap_or_else(|p| p.into_inner()).add(fr)
                        {
                            spill_err = Some(e);
                            STOP.request(Reason::Error);
                        }
                        return false;
                    }
                    match o.other::<MediaOutput>() {
                        None => true,
                        Some(None) => false,
                        Some(Some(m)) => {
                            match m {
                                Ok(i) => {
                                    for p in &i.problems {
                                        messages::warning(format_args!(
                                            "{}: {p}",
                                            rec.path.display()
                                        ));
                                    }
                                }
                                Err(e) => messages::warning(format_args!("{e}")),
                            }
                            true
                        }
                    }
                });
                emit(&file_json(&rec));
                records.push(rec);
            }
            Event::Skipped { path, kind } => {
                if kind != SkipKind::Symlink {
                    messages::warning(format_args!(
                        "{}: skipped: {}",
                        path.display(),
                        kind.describe()
                    ));
                }
                emit(&problem_json(Some(&path), Some(kind), None));
                skipped.push((path, kind));
            }
            Event::Failed(e) => {
                bar.file_done();
                messages::error(format_args!("{e}"));
                failed_lines.push(e.to_string());
                let fj = problem_json(e.path(), None, Some((e.kind(), e.to_string())));
                emit(&fj);
                failed.push(fj);
            }
        },
    );
    drop(bar);
    let elapsed = start.elapsed().as_secs_f64();
    if let Some(e) = jsonl_err {
        return Err(anyhow::Error::new(e)
            .context(format!("{}: cannot write", plan.jsonl.unwrap().display())));
    }
    if let Some(e) = spill_err {
        return Err(anyhow::Error::new(e).context(format!(
            "{}: cannot write the fingerprint spill files (--temp-dir)",
            plan.reduce
                .as_ref()
                .and_then(|r| r.temp_dir.clone())
                .unwrap_or_else(std::env::temp_dir)
                .display()
        )));
    }
    if STOP.is_stopping() {
        // Dropping the outputs removes their temporary files.
        return Ok(Outcome::Interrupted);
    }
    if let Some(a) = acc.as_ref() {
        a.lock()
            .unwrap_or_else(|p| p.into_inner())
            .finish()
            .context("fingerprint spill files (--temp-dir)")?;
    }

    records.sort_unstable_by(|a, b| {
        a.path
            .as_os_str()
            .as_bytes()
            .cmp(b.path.as_os_str().as_bytes())
    });
    let roots = &plan.cfg.roots;
    let mut entries: Vec<Entry> = records
        .iter()
        .map(|r| Entry {
            path: manifest_name(&r.path, roots, r.root),
            size: Some(r.size),
            digests: r.digests(),
            line: 0,
        })
        .collect();
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    let cwd = std::env::current_dir()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let invoked = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    let comment = [format!("Invoked from: {cwd}"), format!("$ {invoked}")];
    let mut unwritable = 0usize;
    for (format, mut out) in manifests {
        let formats: Vec<Format> = match &format {
            Format::Bsd(_) => plan.algorithms.iter().map(|a| Format::Bsd(*a)).collect(),
            f => vec![f.clone()],
        };
        for f in &formats {
            let left_out = trawl_manifest::write_manifest(
                &mut out,
                f,
                &entries,
                Style { zero: plan.zero },
                &comment,
            )
            .with_context(|| format!("{}: cannot write manifest", out.name()))?;
            for name in left_out {
                unwritable += 1;
                messages::error(format_args!(
                    "{}: left out of {} manifest {}: a line break in a name cannot be written in that format",
                    String::from_utf8_lossy(&name).escape_debug(),
                    f.name(),
                    out.name()
                ));
            }
        }
        if STOP.is_stopping() {
            return Ok(Outcome::Interrupted);
        }
        out.commit()?;
    }
    let media: Vec<(&FileRecord, &trawl_media::FlvIndex)> = records
        .iter()
        .filter_map(|r| {
            r.outputs
                .iter()
                .find_map(|o| match o.other::<MediaOutput>() {
                    Some(Some(Ok(i))) => Some((r, i)),
                    _ => None,
                })
        })
        .collect();
    if let Some(dir) = &plan.media_index {
        for (r, i) in &media {
            let target = dir.join(media_index_name(&r.path, roots, r.root));
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("{}: cannot create", parent.display()))?;
            }
            let mut out = Output::create(&target)?;
            serde_json::to_writer_pretty(
                &mut out,
                &serde_json::json!({
                    "schema_version": trawl_printer::json::SCHEMA_VERSION,
                    "files": [i],
                }),
            )
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .with_context(|| format!("{}: cannot write", out.name()))?;
            out.commit()?;
        }
    }
    let bytes: u64 = records.iter().map(|r| r.size).sum();
    let reduction = acc
        .as_ref()
        .map(|a| a.lock().unwrap_or_else(|p| p.into_inner()).report());
    let rss = super::peak_rss();
    if let Some(mut out) = json.take() {
        let report = ScanReport {
            schema_version: trawl_printer::json::SCHEMA_VERSION,
            trawl_version: env!("CARGO_PKG_VERSION").to_string(),
            roots: roots.iter().map(|r| JsonPath::new(r)).collect(),
            algorithms: plan
                .algorithms
                .iter()
                .map(|a| a.name().to_string())
                .collect(),
            digest_implementations: plan
                .algorithms
                .iter()
                .map(|a| (a.name().to_string(), a.implementation()))
                .collect(),
            io: format!("{:?}", plan.cfg.io).to_lowercase(),
            threads: plan.cfg.threads,
            totals: Totals {
                files: records.len() as u64,
                bytes,
                skipped: skipped.len() as u64,
                failed: failed.len() as u64,
                seconds: elapsed,
                bytes_per_second: if elapsed > 0.0 {
                    bytes as f64 / elapsed
                } else {
                    0.0
                },
                peak_rss_bytes: rss,
            },
            reduction: reduction.as_ref().map(serde_json::to_value).transpose()?,
            cancelled: false,
            files: records.iter().map(file_json).collect(),
            skipped: skipped
                .iter()
                .map(|(p, k)| problem_json(Some(p), Some(*k), None))
                .collect(),
            failed,
        };
        serde_json::to_writer_pretty(&mut out, &report)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .with_context(|| format!("{}: cannot write", out.name()))?;
        out.commit()?;
    }
    if let Some(out) = jsonl.take() {
        out.commit()?;
    }

    if !plan.quiet {
        let mut s = String::new();
        let nskip_special = skipped
            .iter()
            .filter(|(_, k)| *k != SkipKind::Symlink)
            .count();
        let nlinks = skipped.len() - nskip_special;
        let digests = match plan.algorithms.len() {
            0 => "no digests".to_string(),
            n => format!(
                "{n} digest{}: {}",
                if n == 1 { "" } else { "s" },
                plan.algorithms
                    .iter()
                    .map(|a| a.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        s.push_str(&format!(
            "{} files, {} read in {:.2} s ({}); {digests}\n",
            records.len(),
            human::bytes(bytes),
            elapsed,
            human::rate(bytes, elapsed),
        ));
        if nskip_special + nlinks > 0 {
            s.push_str(&format!(
                "skipped: {nskip_special} special files, {nlinks} symbolic links not followed\n"
            ));
        }
        if let Some(red) = &reduction {
            s.push_str(&trawl_printer::reduction::table(&serde_json::to_value(
                red,
            )?));
            if acc
                .as_ref()
                .is_some_and(|a| a.lock().unwrap_or_else(|p| p.into_inner()).spilled())
            {
                s.push_str("(the fingerprint index passed --memory and was spilled to disk)\n");
            }
        }
        if !media.is_empty() {
            s.push_str(&format!(
                "media: {} FLV files indexed, {} keyframes{}\n",
                media.len(),
                media.iter().map(|(_, i)| i.keyframes.len()).sum::<usize>(),
                match media.iter().filter(|(_, i)| !i.problems.is_empty()).count() {
                    0 => String::new(),
                    n => format!(", {n} with problems (listed above)"),
                }
            ));
        }
        if let Some(r) = rss {
            s.push_str(&format!("peak memory: {}\n", human::bytes(r)));
        }
        if !failed_lines.is_empty() {
            s.push_str(&format!(
                "FAILED: {} files could not be read:\n",
                failed_lines.len()
            ));
            for l in &failed_lines {
                s.push_str(&format!("  {l}\n"));
            }
        }
        if stdout_taken {
            eprint!("{s}");
        } else {
            std::io::stdout().write_all(s.as_bytes())?;
        }
    }
    Ok(if failed_lines.is_empty() && unwritable == 0 {
        Outcome::Ok
    } else {
        Outcome::Trouble
    })
}

/// The algorithms a set of manifest entries uses, in first-seen order.
pub fn algorithms_of(entries: &[Entry]) -> Vec<Algorithm> {
    let mut out: Vec<Algorithm> = Vec::new();
    for e in entries {
        for (a, _) in &e.digests {
            if !out.contains(a) {
                out.push(*a);
            }
        }
    }
    out
}
