//! `trawl catalog verify`: the catalog file's integrity and its hash chain, and optionally a
//! head recorded elsewhere.

use std::io::Write;

use trawl_catalog::{Catalog, CatalogError, OpenMode, format_time};

use crate::Outcome;
use crate::flags::lowargs::CatalogVerifyArgs;

pub fn run(a: CatalogVerifyArgs) -> anyhow::Result<Outcome> {
    let expect = expected(a.expect.as_deref())?;
    let mut out = std::io::stdout().lock();
    let Some(cat) = open(&a, &mut out)? else {
        return Ok(Outcome::Difference);
    };
    let rep = cat.verify_chain()?;
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
    sound(&mut out, &rep.unsealed, rep.head.as_ref(), rep.runs_ok)?;
    match expect {
        Some(want) => in_chain(&cat, &a, &want, &mut out),
        None => Ok(Outcome::Ok),
    }
}

/// `--expect`, checked to be a chain digest (64 hex digits), lowercased.
fn expected(expect: Option<&str>) -> anyhow::Result<Option<String>> {
    let Some(e) = expect else {
        return Ok(None);
    };
    let e = e.trim();
    if e.len() != 64 || !e.bytes().all(|b| b.is_ascii_hexdigit()) {
        anyhow::bail!(
            "--expect '{e}': not a chain digest (64 hex digits, as `audit` and `catalog verify` print after 'head')"
        );
    }
    Ok(Some(e.to_ascii_lowercase()))
}

/// The catalog, opened to read; None (said on `out`) where its schema holds objects trawl did
/// not create: the chain's rows cannot be trusted to be read as written (a view may lie), so
/// it is not checked.
fn open(a: &CatalogVerifyArgs, out: &mut impl Write) -> anyhow::Result<Option<Catalog>> {
    match Catalog::open(&a.catalog, OpenMode::Read) {
        Err(CatalogError::Schema { objects, .. }) => {
            for o in &objects {
                crate::messages::error(format_args!("{}: schema: {o}", a.catalog.display()));
            }
            writeln!(
                out,
                "catalog schema ALTERED: {} objects trawl did not create, or redefined; the chain was not checked",
                objects.len()
            )?;
            Ok(None)
        }
        r => Ok(Some(r?)),
    }
}

/// Says a sound chain: the runs not sealed yet, then the head (`runs_ok` sealed runs).
fn sound(
    out: &mut impl Write,
    unsealed: &[i64],
    head: Option<&(i64, Vec<u8>)>,
    runs_ok: u64,
) -> std::io::Result<()> {
    for id in unsealed {
        writeln!(
            out,
            "run {id} is not sealed yet (running or interrupted): its events are not protected until it completes"
        )?;
    }
    match head {
        Some((id, h)) => writeln!(
            out,
            "catalog chain OK: {runs_ok} sealed runs; head run {id} {}",
            hex::encode(h)
        ),
        None => writeln!(out, "catalog chain OK: no sealed runs yet"),
    }
}

/// Whether the head `want` (recorded elsewhere) is among the chain's digests.
fn in_chain(
    cat: &Catalog,
    a: &CatalogVerifyArgs,
    want: &str,
    out: &mut impl Write,
) -> anyhow::Result<Outcome> {
    let ok = cat.chain_digests()?.iter().any(|h| hex::encode(h) == want);
    if !ok {
        crate::messages::error(format_args!(
            "{}: the expected head {want} is not in the chain: runs were removed or the catalog was rebuilt",
            a.catalog.display()
        ));
        return Ok(Outcome::Difference);
    }
    writeln!(out, "expected head {want} is in the chain")?;
    Ok(Outcome::Ok)
}
