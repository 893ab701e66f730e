//! `trawl catalog export`: the registered files as a manifest other tools read.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use trawl_catalog::{Catalog, OpenMode};
use trawl_digest::Algorithm;
use trawl_manifest::{Format, Style};

use crate::Outcome;
use crate::commands::output::Output;
use crate::flags::lowargs::CatalogExportArgs;

pub fn run(a: CatalogExportArgs) -> anyhow::Result<Outcome> {
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
        k if trawl_manifest::gnu_tool_algorithm(k).is_some() => Kind::Manifest(Format::Gnu(need(
            trawl_manifest::gnu_tool_algorithm(k).expect("just checked"),
        )?)),
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
            "--format {other}: expected {}, hashdeep or bagit",
            trawl_manifest::GNU_TOOL_NAMES
        ),
    };
    // The algorithms each exported file must have a digest of. A file registered before an
    // algorithm was added to the catalog lacks it until an audit reads it: it is left out of
    // the manifest, counted, and the first named.
    let needs: Vec<Algorithm> = match &kind {
        Kind::Manifest(Format::Hashdeep(hd)) => hd.clone(),
        Kind::Manifest(Format::Gnu(alg) | Format::Bsd(alg)) => vec![*alg],
        Kind::Bagit(alg) => vec![*alg],
    };
    let (lacking, total) = (std::cell::Cell::new(0u64), std::cell::Cell::new(0u64));
    let first_lacking: std::cell::RefCell<Option<Vec<u8>>> = Default::default();
    let has_all = |e: &trawl_manifest::Entry| {
        total.set(total.get() + 1);
        let ok = needs.iter().all(|a| e.digests.iter().any(|(b, _)| b == a));
        if !ok {
            lacking.set(lacking.get() + 1);
            first_lacking
                .borrow_mut()
                .get_or_insert_with(|| e.path.clone());
        }
        ok
    };
    let dest = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let mut out = Output::create_beside_catalog(&dest, &a.catalog)?;
    let name = out.name();
    match kind {
        Kind::Manifest(f) => {
            let comment = [format!("Exported from catalog {}", a.catalog.display())];
            // hashdeep names of one root's files as `scan -m hashdeep` writes them (`./a`); of
            // several roots', each root's absolute path first, as hashdeep writes without -l.
            let style = Style {
                hashdeep_base: (cat.roots()?.len() == 1).then(|| b".".to_vec()),
                ..Style::default()
            };
            // Writes the manifest to `to`; the names the format cannot hold are left out and
            // counted, which refuses the export: nothing is written.
            let write = |to: &mut dyn std::io::Write| -> anyhow::Result<()> {
                // Counted in the pass that writes (the first of two, to no file, counts too).
                lacking.set(0);
                total.set(0);
                let mut w = trawl_manifest::ManifestWriter::begin(to, &f, style.clone(), &comment)
                    .with_context(|| format!("{name}: cannot write"))?;
                cat.for_each_manifest_entry(&mut |e| {
                    if has_all(e) { Ok(w.entry(e)?) } else { Ok(()) }
                })?
                .with_context(|| format!("{name}: cannot write"))?;
                let left_out = w.finish();
                if !left_out.is_empty() {
                    bail!(
                        "{} names have line breaks, which {} cannot hold; nothing written",
                        left_out.len(),
                        f.name()
                    );
                }
                Ok(())
            };
            // Standard output cannot be taken back: a first pass writes nowhere, so that a
            // refused export writes nothing there either (a file is dropped, not committed).
            if out.is_stdout() {
                write(&mut std::io::sink())?;
            }
            write(&mut out)?;
        }
        Kind::Bagit(alg) => {
            // A BagIt payload manifest (manifest-ALG.txt): paths under data/, percent-encoded.
            cat.for_each_manifest_entry(&mut |e| {
                let found = e.digests.iter().find(|(a, _)| *a == alg);
                let (true, Some((_, d))) = (has_all(e), found) else {
                    return Ok(());
                };
                let mut line = hex::encode(d).into_bytes();
                line.extend_from_slice(b"  data/");
                line.extend_from_slice(&trawl_bag::encode_path(&e.path));
                line.push(b'\n');
                out.write_all(&line)
            })?
            .with_context(|| format!("{name}: cannot write"))?;
        }
    }
    out.commit()?;
    let left_out = lacking.get();
    if left_out == 0 {
        return Ok(Outcome::Ok);
    }
    let first = first_lacking.take().unwrap_or_default();
    let first =
        std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&first));
    // One root: the manifest names files below it; the message names the file.
    let roots = cat.roots()?;
    let first = match roots.as_slice() {
        [(_, root)] => root.join(first),
        _ => first.to_path_buf(),
    };
    crate::messages::warning(format_args!(
        "{}: {left_out} of {} registered files have no {algs} digest yet (the first: {}): not in the manifest; {algs} was added to the catalog after they were last read, and the next audit that reads them records it",
        a.catalog.display(),
        total.get(),
        first.display(),
        algs = needs.iter().map(|a| a.name()).collect::<Vec<_>>().join("/"),
    ));
    // Not every file is in the manifest: not checked, as `verify` says of files it could not.
    Ok(Outcome::Unchecked)
}
