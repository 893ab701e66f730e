//! `trawl catalog due`: the files that are due (present, and not verified within the policy's
//! period or `--older-than`), oldest verification first, as text or JSON, with their totals.
//! It exits 0 whether files are due or not: being due is a schedule's state, not a finding
//! (an audit's exit code says what is wrong with a file).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use anyhow::Context;
use std::time::Duration;

use trawl_catalog::{Catalog, CatalogError, DueFile, DueTotals, OpenMode, format_time, now_secs};

use crate::Outcome;
use crate::flags::lowargs::CatalogDueArgs;
use crate::flags::policy::{parse_duration, show_duration};

pub fn run(a: CatalogDueArgs) -> anyhow::Result<Outcome> {
    let given = a
        .older_than
        .as_deref()
        .map(|s| parse_duration("--older-than", s))
        .transpose()?;
    let cat = Catalog::open(&a.catalog, OpenMode::Read)?;
    let age = match given {
        Some(d) => d,
        None => {
            let p = cat.policy()?.ok_or_else(|| CatalogError::NoPolicy {
                path: a.catalog.clone(),
            })?;
            p.every
        }
    };
    let now = now_secs();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // The first write error ends the writing; the list is still walked to its end.
    let mut written: std::io::Result<()> = Ok(());
    let mut write = |f: &mut dyn FnMut(&mut dyn Write) -> std::io::Result<()>| {
        if written.is_ok() {
            written = f(&mut out);
        }
    };
    if a.json {
        write(&mut |o| json_head(o, &a, now, age));
    }
    let mut first = true;
    let totals = cat.for_each_due(now, age, &mut |f| {
        write(&mut |o| match a.json {
            true => json_line(o, f, std::mem::take(&mut first)),
            false => text_line(o, f),
        })
    })?;
    write(&mut |o| tail(o, a.json, totals, now, age));
    match written.and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Outcome::Ok),
        r => r.context("stdout: cannot write").map(|()| Outcome::Ok),
    }
}

/// The JSON up to the list: the catalog, the time, the age.
fn json_head(
    o: &mut dyn Write,
    a: &CatalogDueArgs,
    now: i64,
    age: Duration,
) -> std::io::Result<()> {
    write!(
        o,
        "{{\"catalog\":{},\"now\":\"{}\",\"older_than_seconds\":{},\"files\":[",
        serde_json::json!(a.catalog.to_string_lossy()),
        format_time(now),
        age.as_secs()
    )
}

/// After the list: the JSON's totals, or the text's summary line.
fn tail(
    o: &mut dyn Write,
    json: bool,
    t: DueTotals,
    now: i64,
    age: Duration,
) -> std::io::Result<()> {
    match json {
        true => writeln!(
            o,
            "],\"totals\":{{\"files\":{},\"bytes\":{}}}}}",
            t.files, t.bytes
        ),
        false => writeln!(
            o,
            "{} files ({}) due: not verified within {} (as of {})",
            t.files,
            trawl_printer::human_bytes(t.bytes),
            show_duration(age),
            format_time(now)
        ),
    }
}

/// When a file was last verified, as printed: RFC 3339, or `never`.
fn verified(f: &DueFile) -> String {
    f.last_verified.map_or_else(|| "never".into(), format_time)
}

/// `LAST-VERIFIED  SIZE  PATH` (a corrupt or unreadable file's state after it), the path with
/// control characters escaped.
fn text_line(o: &mut dyn Write, f: &DueFile) -> std::io::Result<()> {
    let shown = f.path.display().to_string().escape_debug().to_string();
    let state = match f.state.as_str() {
        "ok" => String::new(),
        s => format!(" ({s})"),
    };
    writeln!(o, "{:<20}  {:>14}  {shown}{state}", verified(f), f.size)
}

/// One file of the JSON list: `path` (and `path_hex` where it is not UTF-8), `size`,
/// `last_verified` (RFC 3339, or null for never), `state`.
fn json_line(o: &mut dyn Write, f: &DueFile, first: bool) -> std::io::Result<()> {
    let bytes = f.path.as_os_str().as_bytes();
    let mut v = serde_json::json!({
        "path": f.path.to_string_lossy(),
        "size": f.size,
        "last_verified": f.last_verified.map(format_time),
        "state": f.state,
    });
    if std::str::from_utf8(bytes).is_err() {
        v["path_hex"] = serde_json::json!(hex::encode(bytes));
    }
    if !first {
        o.write_all(b",")?;
    }
    o.write_all(b"\n")?;
    serde_json::to_writer(&mut *o, &v).map_err(std::io::Error::other)
}
