//! `trawl verify`: checks files against a manifest, like `sha256sum -c` and `hashdeep -a -k`.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use anyhow::Context;
use trawl_manifest::{Entry, ManifestError};
use trawl_read::ReadError;
use trawl_scan::{DigestLanes, Event, Input, ScanError};

use crate::flags::hiargs::scan_config;
use crate::flags::lowargs::VerifyArgs;
use crate::stop::STOP;
use crate::{Outcome, messages};
use trawl_manifest::algorithms_of;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Status {
    Pending,
    Ok,
    Failed(String),
    Missing,
    Unreadable(String),
}

/// A name as sha256sum -c prints it: with a leading `\` and escapes when it holds a line break
/// or backslash.
fn display_name(name: &[u8]) -> Vec<u8> {
    if trawl_manifest::needs_escape(name) {
        let mut v = b"\\".to_vec();
        v.extend(trawl_manifest::escape_name(name));
        v
    } else {
        name.to_vec()
    }
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

/// Whether a manifest name could lead outside the root: absolute, or with a `..` component.
fn leaves_root(name: &[u8]) -> bool {
    name.first() == Some(&b'/') || name.split(|&b| b == b'/').any(|c| c == b"..")
}

pub fn run(a: VerifyArgs) -> anyhow::Result<Outcome> {
    let data = std::fs::read(&a.manifest)
        .with_context(|| format!("{}: cannot read manifest", a.manifest.display()))?;
    let prefer = match &a.digest {
        Some(d) => trawl_digest::parse_list(d)?,
        None => Vec::new(),
    };
    let hint = a
        .manifest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parsed = trawl_manifest::detect_and_parse(&data, &prefer, &hint)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.manifest.display()))?;
    let mut trouble = false;
    for e in &parsed.errors {
        trouble = true;
        match e {
            ManifestError::Line { line, reason } => {
                messages::error(format_args!("{}:{line}: {reason}", a.manifest.display()))
            }
            ManifestError::Whole(r) => {
                messages::error(format_args!("{}: {r}", a.manifest.display()))
            }
        }
    }

    // One entry per path; the same path listed twice must agree.
    let mut entries: Vec<Entry> = Vec::new();
    let mut by_name: HashMap<Vec<u8>, usize> = HashMap::new();
    let confine = a.confine || (a.root.is_some() && !a.no_confine);
    for mut e in parsed.entries {
        e.path = strip_dot_slash(&e.path).to_vec();
        if confine && leaves_root(&e.path) {
            trouble = true;
            messages::error(format_args!(
                "{}:{}: {}: refused: absolute or '..' names may lead outside the root (--confine; --no-confine checks them as sha256sum does)",
                a.manifest.display(),
                e.line,
                String::from_utf8_lossy(&e.path)
            ));
            continue;
        }
        match by_name.get(&e.path) {
            Some(&i) => {
                let prev = &mut entries[i];
                for (alg, d) in e.digests {
                    match prev.digests.iter().find(|(a, _)| *a == alg) {
                        Some((_, pd)) if *pd != d => {
                            trouble = true;
                            messages::error(format_args!(
                                "{}:{}: {} is listed again (first on line {}) with a different {alg} digest",
                                a.manifest.display(),
                                e.line,
                                String::from_utf8_lossy(&e.path),
                                prev.line
                            ));
                        }
                        Some(_) => {}
                        None => prev.digests.push((alg, d)),
                    }
                }
            }
            None => {
                by_name.insert(e.path.clone(), entries.len());
                entries.push(e);
            }
        }
    }

    let root = a.root.clone().unwrap_or_else(|| PathBuf::from("."));
    let full = |name: &[u8]| -> PathBuf { root.join(OsStr::from_bytes(name)) };
    let paths: Vec<PathBuf> = entries.iter().map(|e| full(&e.path)).collect();
    let index: HashMap<PathBuf, usize> = paths
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, p)| (p, i))
        .collect();
    let algorithms = algorithms_of(&entries);
    let mut status = vec![Status::Pending; entries.len()];

    let cfg = scan_config(vec![root.clone()], &a.read)?;
    let bar = crate::progress::Bar::new(a.read.quiet);
    if !algorithms.is_empty() {
        trawl_scan::scan(
            &cfg,
            Input::Files(&paths),
            &DigestLanes(algorithms),
            &bar,
            &STOP,
            &mut |ev| {
                let (path, st) = match ev {
                    Event::File(rec) => {
                        let i = index[&rec.path];
                        let e = &entries[i];
                        let mut st = Status::Ok;
                        if let Some(sz) = e.size
                            && sz != rec.size
                        {
                            st =
                                Status::Failed(format!("size is {}, manifest says {sz}", rec.size));
                        }
                        for (alg, got) in rec.digests().iter().map(|(a, d)| (*a, d)) {
                            let want = e.digests.iter().find(|(a, _)| *a == alg).map(|(_, d)| d);
                            if want.is_some_and(|w| w != got) && st == Status::Ok {
                                st = Status::Failed(format!("{alg} differs"));
                            }
                        }
                        (rec.path, st)
                    }
                    Event::Failed(ScanError::Read(ReadError::Vanished { path })) => {
                        (path, Status::Missing)
                    }
                    Event::Failed(ScanError::Read(r)) => {
                        (r.path().to_path_buf(), Status::Unreadable(r.reason()))
                    }
                    Event::Failed(other) => {
                        messages::error(format_args!("{other}"));
                        return;
                    }
                    Event::Skipped { path, kind } => {
                        (path, Status::Unreadable(kind.describe().to_string()))
                    }
                };
                if let Some(&i) = index.get(&path) {
                    status[i] = st;
                }
            },
        );
    }
    drop(bar);
    if STOP.is_stopping() {
        return Ok(Outcome::Interrupted);
    }

    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let (mut ok, mut failed, mut missing, mut unreadable) = (0u64, 0u64, 0u64, 0u64);
    for (e, st) in entries.iter().zip(&status) {
        let (word, detail): (&str, Option<&str>) = match st {
            Status::Ok => {
                ok += 1;
                if a.failures_only {
                    continue;
                }
                ("OK", None)
            }
            Status::Failed(why) => {
                failed += 1;
                ("FAILED", Some(why))
            }
            Status::Missing => {
                missing += 1;
                ("MISSING", None)
            }
            Status::Unreadable(why) => {
                unreadable += 1;
                ("FAILED open or read", Some(why))
            }
            Status::Pending => {
                unreadable += 1;
                ("FAILED open or read", Some("not read"))
            }
        };
        out.write_all(&display_name(&e.path))?;
        write!(out, ": {word}")?;
        if let Some(d) = detail {
            write!(out, " ({d})")?;
        }
        writeln!(out)?;
    }
    let mut extra = 0u64;
    if a.strict {
        let listed: HashSet<&[u8]> = entries.iter().map(|e| e.path.as_slice()).collect();
        let mut found = unlisted_files(&root, &cfg.walk, &a.manifest);
        found.sort();
        for name in found {
            if !listed.contains(name.as_slice()) {
                extra += 1;
                out.write_all(&display_name(&name))?;
                writeln!(out, ": NOT IN MANIFEST")?;
            }
        }
    }
    out.flush()?;
    drop(out);
    let total = entries.len() as u64;
    if failed + missing + unreadable + extra > 0 || !a.read.quiet {
        messages::error(format_args!(
            "{total} listed: {ok} OK, {failed} FAILED, {missing} missing, {unreadable} unreadable{}",
            if a.strict {
                format!(", {extra} not in manifest")
            } else {
                String::new()
            }
        ));
    }
    Ok(if unreadable > 0 || trouble {
        Outcome::Trouble
    } else if failed + missing + extra > 0 {
        Outcome::Difference
    } else {
        Outcome::Ok
    })
}

/// Every regular file under `root`, as manifest names, except the manifest itself.
fn unlisted_files(root: &Path, opts: &trawl_walk::WalkOptions, manifest: &Path) -> Vec<Vec<u8>> {
    let (tx, rx) = crossbeam_channel::bounded(1024);
    let stop = trawl_stop::Stop::new();
    // The manifest itself is not an unlisted file; compare by identity, not by name.
    let manifest_id = std::fs::metadata(manifest).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    });
    let roots = vec![root.to_path_buf()];
    std::thread::scope(|s| {
        s.spawn(|| {
            trawl_walk::walk(&roots, opts, &tx, &stop, &|_| {});
            drop(tx);
        });
        let mut names = Vec::new();
        for item in rx {
            if let trawl_walk::WalkItem::File(f) = item {
                if manifest_id == Some((f.dev, f.ino)) {
                    continue;
                }
                names.push(trawl_engine::manifest_name(&f.path, &roots, 0));
            }
        }
        names
    })
}
