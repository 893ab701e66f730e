//! `trawl catalog report|history|export|verify`: read-only questions to an audit catalog.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use trawl_catalog::lock::Lock;
use trawl_catalog::{Catalog, OpenMode, format_time};
use trawl_digest::Algorithm;
use trawl_manifest::{Entry, Format, Style};
use trawl_printer::human;

use super::output::Output;
use crate::Outcome;
use crate::flags::lowargs::{
    CatalogCommand, CatalogExportArgs, CatalogHistoryArgs, CatalogReportArgs, CatalogVerifyArgs,
};
use trawl_printer::audit::{Shown, event_line};

pub fn run(c: CatalogCommand) -> anyhow::Result<Outcome> {
    match c {
        CatalogCommand::Report(a) => report(a),
        CatalogCommand::History(a) => history(a),
        CatalogCommand::Export(a) => export(a),
        CatalogCommand::Verify(a) => verify(a),
    }
}

fn shown_as_is(cat: &Catalog) -> anyhow::Result<Shown> {
    Ok(Shown {
        roots: cat
            .roots()?
            .into_iter()
            .map(|(_, p)| (p.clone(), p))
            .collect(),
    })
}

fn report(a: CatalogReportArgs) -> anyhow::Result<Outcome> {
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    let r = cat.report()?;
    let mut s = String::new();
    s.push_str(&format!(
        "catalog {} (schema {}, {} runs, {}; algorithms {})\n",
        a.catalog.display(),
        trawl_catalog::SCHEMA_VERSION,
        r.runs,
        human::bytes(r.catalog_bytes),
        cat.algorithms()?
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join(",")
    ));
    for (_, root) in cat.roots()? {
        s.push_str(&format!("root {}\n", root.display()));
    }
    match &r.last_run {
        None => s.push_str("no audit yet\n"),
        Some(l) => {
            s.push_str(&format!(
                "last audit: run {} ({}, {}), started {}{}\n",
                l.id,
                l.mode,
                l.status,
                format_time(l.started),
                l.finished
                    .map(|f| format!(", finished {}", format_time(f)))
                    .unwrap_or_default()
            ));
            let counts: Vec<String> = l
                .counts
                .iter()
                .map(|(v, n)| format!("{} {n}", v.name()))
                .collect();
            s.push_str(&format!(
                "  {}; {} files, {} read\n",
                counts.join(", "),
                l.files_read,
                human::bytes(l.bytes_read)
            ));
        }
    }
    if let Some(id) = r.interrupted {
        match Lock::holder(&a.catalog) {
            Some(pid) => s.push_str(&format!("run {id} is running now (pid {pid})\n")),
            None => s.push_str(&format!(
                "run {id} was interrupted; the next audit of the same roots resumes it\n"
            )),
        }
    }
    let total: u64 = r.by_state.iter().map(|(_, n, _)| n).sum();
    s.push_str(&format!("registered files: {total}\n"));
    for (state, n, bytes) in &r.by_state {
        s.push_str(&format!(
            "  {state:<10} {n:>10}  {}\n",
            human::bytes(*bytes)
        ));
    }
    match &r.oldest_verified {
        Some((t, p)) => s.push_str(&format!(
            "oldest verification: {} ({})\n",
            format_time(*t),
            p.display()
        )),
        None => s.push_str("oldest verification: none\n"),
    }
    if r.never_verified > 0 {
        s.push_str(&format!("never verified: {}\n", r.never_verified));
    }
    std::io::stdout().write_all(s.as_bytes())?;
    Ok(Outcome::Ok)
}

fn history(a: CatalogHistoryArgs) -> anyhow::Result<Outcome> {
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    let shown = shown_as_is(&cat)?;
    let algs = cat.algorithms()?;
    let mut out = String::new();
    let mut found = false;
    for (root, rel) in cat.locate(&a.path)? {
        let row = cat.file_row(root, &rel)?;
        let events = cat.history(root, &rel)?;
        if row.is_none() && events.is_empty() {
            continue;
        }
        found = true;
        let root_path = cat
            .roots()?
            .into_iter()
            .find(|(i, _)| *i == root)
            .map(|(_, p)| p)
            .unwrap_or_default();
        let full =
            root_path.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&rel));
        out.push_str(&format!("{}\n", shown.path(&full)));
        if let Some((size, digests, state, present, version, first, verified)) = row {
            out.push_str(&format!(
                "  registered: {state}{}, {size} bytes, version {version}, first seen {}, last verified {}\n",
                if present { "" } else { " (not present)" },
                format_time(first),
                verified.map(format_time).unwrap_or_else(|| "never".into())
            ));
            let mut off = 0;
            for alg in &algs {
                let n = alg.output_len();
                if off + n <= digests.len() {
                    out.push_str(&format!(
                        "  {}: {}\n",
                        alg.name(),
                        hex::encode(&digests[off..off + n])
                    ));
                }
                off += n;
            }
        }
        if events.is_empty() {
            out.push_str("  no events: ok in every audit since it was registered\n");
        }
        for ev in &events {
            out.push_str(&format!(
                "  run {:<4} {}  {}\n",
                ev.run,
                format_time(ev.started),
                event_line(
                    ev.verdict.name(),
                    &ev.path,
                    ev.other_path.as_deref(),
                    ev.detail.as_deref(),
                    &shown
                )
            ));
        }
    }
    if !found {
        bail!(
            "{}: not in catalog {}",
            a.path.display(),
            a.catalog.display()
        );
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(Outcome::Ok)
}

fn export(a: CatalogExportArgs) -> anyhow::Result<Outcome> {
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    let algs = cat.algorithms()?;
    if algs.is_empty() {
        bail!("{}: nothing registered yet", a.catalog.display());
    }
    let need = |alg: Algorithm| -> anyhow::Result<Algorithm> {
        if algs.contains(&alg) {
            Ok(alg)
        } else {
            bail!(
                "{}: the catalog records {}, not {}",
                a.catalog.display(),
                algs.iter().map(|a| a.name()).collect::<Vec<_>>().join(","),
                alg.name()
            )
        }
    };
    enum Kind {
        Manifest(Format),
        Bagit(Algorithm),
    }
    let kind = match a.format.as_str() {
        "md5sum" => Kind::Manifest(Format::Gnu(need(Algorithm::Md5)?)),
        "sha1sum" => Kind::Manifest(Format::Gnu(need(Algorithm::Sha1)?)),
        "sha256sum" => Kind::Manifest(Format::Gnu(need(Algorithm::Sha256)?)),
        "sha512sum" => Kind::Manifest(Format::Gnu(need(Algorithm::Sha512)?)),
        "b3sum" => Kind::Manifest(Format::Gnu(need(Algorithm::Blake3)?)),
        "xxh128sum" => Kind::Manifest(Format::Gnu(need(Algorithm::Xxh3)?)),
        "hashdeep" => {
            let hd: Vec<Algorithm> = trawl_manifest::HASHDEEP_ALGORITHMS
                .into_iter()
                .filter(|h| algs.contains(h))
                .collect();
            if hd.is_empty() {
                bail!("hashdeep takes md5, sha1 or sha256; the catalog records none of them");
            }
            Kind::Manifest(Format::Hashdeep(hd))
        }
        "bagit" => {
            let alg = match &a.digest {
                Some(d) => need(d.parse::<Algorithm>().map_err(anyhow::Error::msg)?)?,
                None => algs[0],
            };
            Kind::Bagit(alg)
        }
        other => bail!(
            "--format {other}: expected sha256sum, md5sum, sha1sum, sha512sum, b3sum, xxh128sum, hashdeep or bagit"
        ),
    };
    let roots = cat.roots()?;
    let single = roots.len() == 1;
    let mut entries: Vec<Entry> = Vec::new();
    cat.for_each_file(&mut |rid, rel, size, digests| {
        let mut path = Vec::new();
        if !single {
            use std::os::unix::ffi::OsStrExt;
            if let Some((_, r)) = roots.iter().find(|(i, _)| *i == rid) {
                path.extend_from_slice(r.as_os_str().as_bytes());
                path.push(b'/');
            }
        }
        path.extend_from_slice(rel);
        let mut ds = Vec::new();
        let mut off = 0;
        for alg in &algs {
            let n = alg.output_len();
            if off + n <= digests.len() {
                ds.push((*alg, digests[off..off + n].to_vec()));
            }
            off += n;
        }
        entries.push(Entry {
            path,
            size: Some(size),
            digests: ds,
            line: 0,
        });
    })?;
    let dest = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let mut out = Output::create(&dest)?;
    match kind {
        Kind::Manifest(f) => {
            let comment = [format!("Exported from catalog {}", a.catalog.display())];
            let left_out = trawl_manifest::write_manifest(
                &mut out,
                &f,
                &entries,
                Style { zero: false },
                &comment,
            )
            .with_context(|| format!("{}: cannot write", out.name()))?;
            if !left_out.is_empty() {
                bail!(
                    "{} names have line breaks, which {} cannot hold; nothing written",
                    left_out.len(),
                    f.name()
                );
            }
        }
        Kind::Bagit(alg) => {
            // A BagIt payload manifest (manifest-ALG.txt): paths under data/, percent-encoded.
            for e in &entries {
                let Some((_, d)) = e.digests.iter().find(|(a, _)| *a == alg) else {
                    continue;
                };
                let mut line = hex::encode(d).into_bytes();
                line.extend_from_slice(b"  data/");
                line.extend_from_slice(&trawl_bag::encode_path(&e.path));
                line.push(b'\n');
                out.write_all(&line)
                    .with_context(|| format!("{}: cannot write", out.name()))?;
            }
        }
    }
    out.commit()?;
    Ok(Outcome::Ok)
}

fn verify(a: CatalogVerifyArgs) -> anyhow::Result<Outcome> {
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    let rep = cat.verify_chain()?;
    let mut out = std::io::stdout().lock();
    if !rep.integrity.is_empty() {
        for p in rep.integrity.iter().take(20) {
            crate::messages::error(format_args!("{}: {p}", a.catalog.display()));
        }
        writeln!(
            out,
            "catalog file DAMAGED: SQLite's integrity check found {} problems; the chain was not checked",
            rep.integrity.len()
        )?;
        return Ok(Outcome::Difference);
    }
    if let Some((run, why)) = &rep.broken {
        let when = cat
            .run_summary(*run)
            .map(|s| format!(" (started {})", format_time(s.started)))
            .unwrap_or_default();
        crate::messages::error(format_args!(
            "{}: run {run}{when}: {why}",
            a.catalog.display()
        ));
        writeln!(
            out,
            "catalog chain BROKEN at run {run}; {} runs before it match",
            rep.runs_ok
        )?;
        return Ok(Outcome::Difference);
    }
    for id in &rep.unsealed {
        writeln!(
            out,
            "run {id} is not sealed yet (running or interrupted): its events are not protected until it completes"
        )?;
    }
    match &rep.head {
        Some((id, h)) => {
            writeln!(
                out,
                "catalog chain OK: {} sealed runs; head run {id} {}",
                rep.runs_ok,
                hex::encode(h)
            )?;
        }
        None => writeln!(out, "catalog chain OK: no sealed runs yet")?,
    }
    if let Some(expect) = &a.expect {
        let want = expect.trim().to_ascii_lowercase();
        let ok = cat.chain_digests()?.iter().any(|h| hex::encode(h) == want);
        if !ok {
            crate::messages::error(format_args!(
                "{}: the expected head {want} is not in the chain: runs were removed or the catalog was rebuilt",
                a.catalog.display()
            ));
            return Ok(Outcome::Difference);
        }
        writeln!(out, "expected head {want} is in the chain")?;
    }
    Ok(Outcome::Ok)
}
