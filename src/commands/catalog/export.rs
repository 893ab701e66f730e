//! `trawl catalog export`: the registered files as a manifest other tools read (or, in
//! `premis`, as a preservation record).

use std::cell::{Cell, RefCell};
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
    if let Some(f) = super::premis::format(&a.format) {
        let dest = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
        let mut out = Output::create_for_catalog("--output", &dest, &a.catalog, &cat)?;
        super::premis::write(&cat, f, &mut out)?;
        out.commit()?;
        return Ok(Outcome::Ok);
    }
    let kind = Kind::from_args(&a, &algs)?;
    let lacking = Lacking::new(kind.needs());
    let dest = a.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let mut out = Output::create_for_catalog("--output", &dest, &a.catalog, &cat)?;
    match kind {
        Kind::Manifest(f) => write_manifest(&cat, &a, &f, &mut out, &lacking)?,
        Kind::Bagit(alg) => write_bagit(&cat, alg, &mut out, &lacking)?,
    }
    out.commit()?;
    if lacking.count.get() == 0 {
        return Ok(Outcome::Ok);
    }
    warn_lacking(&cat, &a, &lacking)?;
    // Not every file is in the manifest: not checked, as `verify` says of files it could not.
    Ok(Outcome::Unchecked)
}

/// What `--format` asks for: a manifest format, or a BagIt payload manifest of one algorithm.
enum Kind {
    Manifest(Format),
    Bagit(Algorithm),
}

impl Kind {
    /// `--format` and `--digest` read against the algorithms the catalog records (`algs`).
    fn from_args(a: &CatalogExportArgs, algs: &[Algorithm]) -> anyhow::Result<Kind> {
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
        Ok(match a.format.as_str() {
            k if trawl_manifest::gnu_tool_algorithm(k).is_some() => Kind::Manifest(Format::Gnu(
                need(trawl_manifest::gnu_tool_algorithm(k).expect("just checked"))?,
            )),
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
                "--format {other}: expected {}, hashdeep, bagit, premis or premis-jsonl",
                trawl_manifest::GNU_TOOL_NAMES
            ),
        })
    }

    /// The algorithms each exported file must have a digest of.
    fn needs(&self) -> Vec<Algorithm> {
        match self {
            Kind::Manifest(Format::Hashdeep(hd)) => hd.clone(),
            Kind::Manifest(Format::Gnu(alg) | Format::Bsd(alg)) => vec![*alg],
            Kind::Bagit(alg) => vec![*alg],
        }
    }
}

/// The files left out for want of a digest. A file registered before an algorithm was added
/// to the catalog lacks it until an audit reads it: it is left out of the manifest, counted,
/// and the first named.
struct Lacking {
    /// The algorithms each exported file must have a digest of.
    needs: Vec<Algorithm>,
    /// Files left out.
    count: Cell<u64>,
    /// Files seen.
    total: Cell<u64>,
    /// The first file left out.
    first: RefCell<Option<Vec<u8>>>,
}

impl Lacking {
    fn new(needs: Vec<Algorithm>) -> Lacking {
        Lacking {
            needs,
            count: Cell::new(0),
            total: Cell::new(0),
            first: RefCell::default(),
        }
    }

    /// Whether `e` has a digest of every algorithm needed; counts it either way.
    fn has_all(&self, e: &trawl_manifest::Entry) -> bool {
        self.total.set(self.total.get() + 1);
        let ok = self
            .needs
            .iter()
            .all(|a| e.digests.iter().any(|(b, _)| b == a));
        if !ok {
            self.count.set(self.count.get() + 1);
            self.first
                .borrow_mut()
                .get_or_insert_with(|| e.path.clone());
        }
        ok
    }
}

/// Writes the catalog's files as a manifest of format `f` to `out`.
fn write_manifest(
    cat: &Catalog,
    a: &CatalogExportArgs,
    f: &Format,
    out: &mut Output,
    lacking: &Lacking,
) -> anyhow::Result<()> {
    let name = out.name();
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
        lacking.count.set(0);
        lacking.total.set(0);
        let mut w = trawl_manifest::ManifestWriter::begin(to, f, style.clone(), &comment)
            .with_context(|| format!("{name}: cannot write"))?;
        cat.for_each_manifest_entry(&mut |e| {
            if lacking.has_all(e) {
                w.entry(e)
            } else {
                Ok(())
            }
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
    write(out)
}

/// Writes the catalog's files as a BagIt payload manifest (manifest-ALG.txt) to `out`: paths
/// under data/, percent-encoded.
fn write_bagit(
    cat: &Catalog,
    alg: Algorithm,
    out: &mut Output,
    lacking: &Lacking,
) -> anyhow::Result<()> {
    let name = out.name();
    cat.for_each_manifest_entry(&mut |e| {
        let found = e.digests.iter().find(|(a, _)| *a == alg);
        let (true, Some((_, d))) = (lacking.has_all(e), found) else {
            return Ok(());
        };
        let mut line = hex::encode(d).into_bytes();
        line.extend_from_slice(b"  data/");
        line.extend_from_slice(&trawl_bag::encode_path(&e.path));
        line.push(b'\n');
        Ok(out.write_all(&line)?)
    })?
    .with_context(|| format!("{name}: cannot write"))
}

/// Warns of the files left out of the manifest, naming the first.
fn warn_lacking(cat: &Catalog, a: &CatalogExportArgs, lacking: &Lacking) -> anyhow::Result<()> {
    let first = lacking.first.take().unwrap_or_default();
    let first =
        std::path::Path::new(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&first));
    // One root: the manifest names files below it; the message names the file.
    let roots = cat.roots()?;
    let first = match roots.as_slice() {
        [(_, root)] => root.join(first),
        _ => first.to_path_buf(),
    };
    crate::messages::warning(format_args!(
        "{}: {} of {} registered files have no {algs} digest yet (the first: {}): not in the manifest; {algs} was added to the catalog after they were last read, and the next audit that reads them records it",
        a.catalog.display(),
        lacking.count.get(),
        lacking.total.get(),
        first.display(),
        algs = lacking
            .needs
            .iter()
            .map(|a| a.name())
            .collect::<Vec<_>>()
            .join("/"),
    ));
    Ok(())
}
