//! `trawl catalog policy`: sets, shows or clears the collection's policy (how often every file
//! is read, how much one run may read, when runs may start), as text or JSON.

use std::io::Write;
use std::time::Duration;

use anyhow::bail;
use trawl_catalog::{Catalog, CatalogError, DueTotals, OpenMode, Policy, Window, now_secs};

use crate::Outcome;
use crate::flags::lowargs::CatalogPolicyArgs;
use crate::flags::policy::{positive_duration, positive_size, show_duration};

pub fn run(a: CatalogPolicyArgs) -> anyhow::Result<Outcome> {
    let setting =
        a.every.is_some() || a.max_bytes.is_some() || a.max_time.is_some() || a.window.is_some();
    // Every value is checked before the catalog is opened: a bad one changes nothing.
    let every = a
        .every
        .as_deref()
        .map(|s| positive_duration("--every", s))
        .transpose()?;
    let max_bytes = a
        .max_bytes
        .as_deref()
        .map(|s| positive_size("--max-bytes", s))
        .transpose()?;
    let max_time = a
        .max_time
        .as_deref()
        .map(|s| positive_duration("--max-time", s))
        .transpose()?;
    let window = a
        .window
        .as_deref()
        .map(|w| Window::parse(w).map_err(|e| anyhow::anyhow!("--window: {e}")))
        .transpose()?;
    let mode = match setting || a.clear {
        true => OpenMode::Upgrade,
        false => OpenMode::Read,
    };
    let cat = Catalog::open(&a.catalog, mode)?;
    if a.clear && !setting {
        let had = cat.clear_policy()?;
        let said = match had {
            true => "policy cleared",
            false => "no policy to clear",
        };
        writeln!(std::io::stdout().lock(), "{}: {said}", a.catalog.display())?;
        return Ok(Outcome::Ok);
    }
    if setting {
        let old = if a.clear {
            None
        } else {
            valid_or_none(&cat, every.is_some())?
        };
        let Some(every) = every.or(old.as_ref().map(|p| p.every)) else {
            bail!(
                "{}: no policy yet: a policy needs --every (how often every file must be read, e.g. --every 90d)",
                a.catalog.display()
            );
        };
        let p = Policy {
            every,
            max_bytes: max_bytes.or(old.as_ref().and_then(|p| p.max_bytes)),
            max_time: max_time.or(old.as_ref().and_then(|p| p.max_time)),
            window: window.or(old.as_ref().and_then(|p| p.window)),
        };
        cat.set_policy(&p, now_secs())?;
    }
    show(&cat, &a)
}

/// The policy the new values amend: the catalog's; or, where its row is not valid (edited by
/// hand) and `--every` is given, none: the new values then replace it whole, saying so.
fn valid_or_none(cat: &Catalog, every: bool) -> anyhow::Result<Option<Policy>> {
    match cat.policy() {
        Err(CatalogError::BadPolicy { path, what }) if every => {
            crate::messages::warning(format_args!(
                "{}: the catalog's policy was not valid ({what}): replaced by the values given",
                path.display()
            ));
            Ok(None)
        }
        r => Ok(r?),
    }
}

/// Prints the policy (or that there is none) with what is due now and what the collection
/// holds, as text or JSON.
fn show(cat: &Catalog, a: &CatalogPolicyArgs) -> anyhow::Result<Outcome> {
    let policy = cat.policy()?;
    let now = now_secs();
    // Every present file: verified before the end of time, or never.
    let all = cat.due_totals(i64::MAX, Duration::ZERO)?;
    let due = policy
        .as_ref()
        .map(|p| cat.due_totals(now, p.every))
        .transpose()?;
    let mut out = std::io::stdout().lock();
    if a.json {
        let v = json(cat, policy.as_ref(), due, all);
        serde_json::to_writer_pretty(&mut out, &v)?;
        writeln!(out)?;
        return Ok(Outcome::Ok);
    }
    let name = a.catalog.display();
    let Some(p) = policy else {
        writeln!(
            out,
            "{name}: no policy (set one: trawl catalog policy -c {name} --every 90d [--max-bytes SIZE] [--max-time TIME] [--window HH:MM-HH:MM])"
        )?;
        return Ok(Outcome::Ok);
    };
    let or_none = |s: Option<String>| s.unwrap_or_else(|| "no limit".into());
    let bytes = p
        .max_bytes
        .map(|b| format!("{} ({b} bytes)", trawl_printer::human_bytes(b)));
    let window = p
        .window
        .map(|w| format!("{w} local time (runs start only then)"));
    let due = due.unwrap_or_default();
    let hb = trawl_printer::human_bytes;
    writeln!(out, "{name}: policy")?;
    writeln!(
        out,
        "  every:      {} (every file read at least this often)",
        show_duration(p.every)
    )?;
    writeln!(out, "  max-bytes:  {} per run", or_none(bytes))?;
    writeln!(
        out,
        "  max-time:   {} per run",
        or_none(p.max_time.map(show_duration))
    )?;
    writeln!(
        out,
        "  window:     {}",
        window.unwrap_or_else(|| "any time".into())
    )?;
    writeln!(out, "  collection: {} files ({})", all.files, hb(all.bytes))?;
    writeln!(out, "  due now:    {} files ({})", due.files, hb(due.bytes))?;
    Ok(Outcome::Ok)
}

/// The policy as JSON: its values (periods in seconds), what is due now, the collection.
fn json(
    cat: &Catalog,
    p: Option<&Policy>,
    due: Option<DueTotals>,
    all: DueTotals,
) -> serde_json::Value {
    let totals = |t: DueTotals| serde_json::json!({"files": t.files, "bytes": t.bytes});
    serde_json::json!({
        "catalog": cat.path().to_string_lossy(),
        "policy": p.map(|p| serde_json::json!({
            "every_seconds": p.every.as_secs(),
            "max_bytes": p.max_bytes,
            "max_time_seconds": p.max_time.map(|t| t.as_secs()),
            "window": p.window.map(|w| w.to_string()),
            "window_zone": "local",
        })),
        "due": due.map(totals),
        "collection": totals(all),
    })
}
