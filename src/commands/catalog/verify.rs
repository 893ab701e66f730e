//! `trawl catalog verify`: the catalog file's integrity and its hash chain, and optionally a
//! head recorded elsewhere.

use std::io::Write;

use trawl_catalog::{Catalog, CatalogError, OpenMode, format_time};

use crate::Outcome;
use crate::flags::lowargs::CatalogVerifyArgs;

pub fn run(a: CatalogVerifyArgs) -> anyhow::Result<Outcome> {
    if let Some(e) = &a.expect {
        let e = e.trim();
        if e.len() != 64 || !e.bytes().all(|b| b.is_ascii_hexdigit()) {
            anyhow::bail!(
                "--expect '{e}': not a chain digest (64 hex digits, as `audit` and `catalog verify` print after 'head')"
            );
        }
    }
    let mut out = std::io::stdout().lock();
    let cat = match Catalog::open(&a.catalog, OpenMode::Read) {
        // A schema with objects trawl did not create: the chain's rows cannot be trusted to be
        // read as written (a view may lie), so it is not checked.
        Err(CatalogError::Schema { objects, .. }) => {
            for o in &objects {
                crate::messages::error(format_args!("{}: schema: {o}", a.catalog.display()));
            }
            writeln!(
                out,
                "catalog schema ALTERED: {} objects trawl did not create, or redefined; the chain was not checked",
                objects.len()
            )?;
            return Ok(Outcome::Difference);
        }
        r => r?,
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
