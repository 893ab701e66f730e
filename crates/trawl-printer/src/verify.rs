//! A verification's output, as `sha256sum -c` prints it: `name: OK`, `name: FAILED (why)`, and
//! the counts.

use std::io::{self, Write};
use std::ops::ControlFlow;

use trawl_report::{VerifyReport, VerifyState};

/// A name as sha256sum -c prints it: with a leading `\` and escapes when it holds a line break
/// or backslash; other control characters (C0, DEL, C1 in UTF-8) are escaped too, as `\NNN`,
/// so that a name cannot act on the terminal.
fn display_name(name: &[u8]) -> Vec<u8> {
    let c1 =
        |i: usize| name[i] == 0xc2 && name.get(i + 1).is_some_and(|b| (0x80..0xa0).contains(b));
    let control = |i: usize| {
        let b = name[i];
        (b < 0x20 && b != b'\n' && b != b'\r') || b == 0x7f || c1(i)
    };
    let controls = (0..name.len()).any(control);
    if !trawl_manifest::needs_escape(name) && !controls {
        return name.to_vec();
    }
    let mut v = b"\\".to_vec();
    let mut i = 0;
    while i < name.len() {
        let n = if c1(i) { 2 } else { 1 };
        if control(i) {
            for b in &name[i..i + n] {
                v.extend(format!("\\{b:03o}").bytes());
            }
        } else {
            v.extend(trawl_manifest::escape_name(&name[i..i + 1]));
        }
        i += n;
    }
    v
}

/// One line per entry (only the ones that are not OK with `failures_only`), then one per file
/// not listed.
pub fn verify_lines(out: &mut dyn Write, r: &VerifyReport, failures_only: bool) -> io::Result<()> {
    let written = r.entries.try_for_each(|e| {
        let (word, detail): (&str, Option<&str>) = match &e.state {
            VerifyState::Ok if failures_only => return ControlFlow::Continue(()),
            VerifyState::Ok => ("OK", None),
            VerifyState::Failed(why) => ("FAILED", Some(why)),
            VerifyState::Missing => ("MISSING", None),
            VerifyState::Unreadable(why) => ("FAILED open or read", Some(why)),
            VerifyState::Unverified(why) => ("NOT VERIFIED", Some(why)),
        };
        let line = (|| {
            out.write_all(&display_name(&e.name))?;
            write!(out, ": {word}")?;
            if let Some(d) = detail {
                write!(out, " ({d})")?;
            }
            writeln!(out)
        })();
        match line {
            Ok(()) => ControlFlow::Continue(()),
            Err(x) => ControlFlow::Break(x),
        }
    })?;
    if let ControlFlow::Break(e) = written {
        return Err(e);
    }
    for name in &r.not_listed {
        out.write_all(&display_name(name))?;
        writeln!(out, ": NOT IN MANIFEST")?;
    }
    Ok(())
}

/// `N listed: a OK, b FAILED, c missing, d unreadable[, e not verified][, f not in manifest]`.
pub fn verify_summary(r: &VerifyReport) -> String {
    let c = r.counts();
    format!(
        "{} listed: {} OK, {} FAILED, {} missing, {} unreadable{}{}",
        r.listed(),
        c.ok,
        c.failed,
        c.missing,
        c.unreadable,
        if c.unverified > 0 {
            format!(", {} not verified", c.unverified)
        } else {
            String::new()
        },
        if r.strict {
            format!(", {} not in manifest", r.not_listed.len())
        } else {
            String::new()
        }
    ) + &if r.missing_ignored > 0 {
        format!(" ({} missing ignored)", r.missing_ignored)
    } else {
        String::new()
    }
}
