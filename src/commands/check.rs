//! `trawl check`: a local tree against the prefix it was uploaded to, with verify's verdict
//! words (OK, FAILED, MISSING, NOT IN LOCAL) and exit codes.

use std::io::Write;

use trawl_s3::{CheckCounts, CheckLine, CheckOptions, Verdict};

use crate::flags::hiargs::{check_temp_dir, parse_size, scan_config};
use crate::flags::lowargs::CheckArgs;
use crate::flags::stores;
use crate::{Outcome, messages};

pub fn run(a: &CheckArgs) -> anyhow::Result<Outcome> {
    let url = stores::object_url(&a.remote)?;
    if !a.local.is_dir() {
        return Err(crate::failure::Refused::text(format!(
            "{}: not a directory (check compares a local tree with a prefix)",
            a.local.display()
        ))
        .into());
    }
    let part_size = match &a.part_size {
        Some(p) => match parse_size(p)? {
            0 => {
                let why = format!(" {p}: must be more than 0");
                return Err(crate::failure::Refused::flag("--part-size", why).into());
            }
            n => Some(n),
        },
        None => None,
    };
    let opts = CheckOptions {
        local: a.local.clone(),
        url,
        part_size,
        download: !a.no_download,
        cfg: scan_config(vec![a.local.clone()], &a.read)?,
        temp_dir: check_temp_dir(a.temp_dir.as_deref())?.unwrap_or_else(std::env::temp_dir),
    };
    let store = stores::connect(&a.store)?;
    let bar = crate::progress::Bar::new(a.read.quiet);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut failed = None;
    let counts = trawl_s3::check(&opts, &store, &bar, &crate::stop::current(), &mut |l| {
        if failed.is_none()
            && let Err(e) = say(&mut out, &l, a.read.quiet)
        {
            failed = Some(e);
        }
    });
    drop(bar);
    if let Some(e) = failed {
        return Err(e.into());
    }
    out.flush()?;
    let counts = counts?;
    if crate::stop::current().is_stopping() {
        return Ok(Outcome::Interrupted);
    }
    let differ = counts.failed + counts.missing + counts.not_in_local;
    if differ + counts.unreadable + counts.not_checked > 0 || !a.read.quiet {
        messages::error(format_args!("{}", summary(&counts)));
    }
    Ok(if counts.unreadable > 0 {
        Outcome::Trouble
    } else if differ > 0 {
        Outcome::Difference
    } else if counts.not_checked > 0 {
        Outcome::Unchecked
    } else {
        Outcome::Ok
    })
}

/// One verdict's line: `NAME: OK`, `NAME: FAILED (why)`, ...; OK lines left out when quiet.
fn say(out: &mut impl Write, l: &CheckLine, quiet: bool) -> std::io::Result<()> {
    let name = String::from_utf8_lossy(&l.name);
    let name = trawl_printer::terminal_line(&name);
    match &l.verdict {
        Verdict::Ok { .. } if quiet => Ok(()),
        Verdict::Ok { how, .. } => writeln!(out, "{name}: OK ({how})"),
        Verdict::Failed(why) => writeln!(out, "{name}: FAILED ({why})"),
        Verdict::Missing => writeln!(out, "{name}: MISSING"),
        Verdict::NotInLocal => writeln!(out, "{name}: NOT IN LOCAL"),
        Verdict::NotChecked(why) => writeln!(out, "{name}: NOT CHECKED ({why})"),
        Verdict::Unreadable(e) => {
            messages::error(format_args!("{name}: {e}"));
            writeln!(out, "{name}: FAILED open or read")
        }
    }
}

fn summary(c: &CheckCounts) -> String {
    format!(
        "check: {} OK ({} by the store's checksums or ETag, {} read from the store), {} FAILED, \
         {} MISSING, {} NOT IN LOCAL, {} NOT CHECKED, {} unreadable",
        c.ok_stored + c.ok_read,
        c.ok_stored,
        c.ok_read,
        c.failed,
        c.missing,
        c.not_in_local,
        c.not_checked,
        c.unreadable
    )
}
