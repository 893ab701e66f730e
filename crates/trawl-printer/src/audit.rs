//! An audit's human output: one line per event, and the run's summary, from the typed report.

use std::path::{Path, PathBuf};

use crate::{human_bytes, human_count, human_rate};
use trawl_report::{AuditEvent, AuditHead};

/// How a path is shown: under the root as the user typed it (the catalog keeps canonical
/// roots), escaped so that a name cannot forge a line.
pub struct ShownPaths {
    /// (canonical root, as typed).
    pub roots: Vec<(PathBuf, PathBuf)>,
}

impl ShownPaths {
    /// `p` as the user typed its root (a path under a canonical root), escaped for a terminal;
    /// a name that is not UTF-8 is shown with its bytes too, so that two names alike as text
    /// are told apart.
    pub fn path(&self, p: &Path) -> String {
        let shown = |p: &Path| {
            trawl_report::JsonPath::new(p)
                .to_string()
                .escape_debug()
                .to_string()
        };
        for (canon, typed) in &self.roots {
            if let Ok(rel) = p.strip_prefix(canon) {
                return shown(&typed.join(rel));
            }
        }
        shown(p)
    }
}

/// `corrupt     path: detail`, or `moved       path (moved from old)`.
pub fn audit_event_line(
    state: &str,
    path: &Path,
    moved_from: Option<&Path>,
    detail: Option<&str>,
    shown: &ShownPaths,
) -> String {
    let mut s = format!("{state:<11} {}", shown.path(path));
    match (state, moved_from) {
        ("moved", Some(from)) => s.push_str(&format!(" (moved from {})", shown.path(from))),
        _ => {
            if let Some(d) = detail {
                s.push_str(": ");
                s.push_str(d);
            }
        }
    }
    s
}

/// What each verdict's number counts in a run of `mode`, said after it in the summary.
fn verdict_words(state: &str, mode: &str) -> &'static str {
    let metadata = mode == "metadata";
    let stored = mode == "stored";
    match state {
        "ok" if metadata => "size and mtime as registered (contents not read)",
        "ok" if stored => {
            "store checksum unchanged: equal to the digest registered from a read (no object read)"
        }
        "ok" => "content as registered",
        "corrupt" if stored => {
            "the store's checksum differs from the registered digest, size and mtime as registered"
        }
        "corrupt" => {
            "content differs from the registered digests (or, with --ocfl, from the inventory's)"
        }
        "restored" => "corrupt in an earlier audit, content as registered again",
        "modified" if metadata || stored => "size or mtime changed (contents not read)",
        "modified" => "size or mtime changed and the content too: registered as a new version",
        "missing" => "registered, and no longer there",
        "new" if metadata => "not registered (a metadata-only audit registers nothing)",
        "new" if stored => "not registered (a no-download audit registers nothing)",
        "new" => "not registered before, registered now",
        "moved" => "a registered file found under another name",
        "unreadable" if stored => "could not be looked up",
        "unreadable" => "could not be read",
        "uncompared" => {
            "not compared: the store holds no checksum of the whole object that the catalog records (a full audit reads them)"
        }
        _ => "",
    }
}

/// How the summary speaks of a run: what was asked of it beyond its figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct AuditSummaryOf {
    /// The roots held no registered file before: this run registered the collection.
    pub registration: bool,
    /// The budget (`--max-bytes`/`--max-time`) stopped the reads before the plan's end.
    pub budget_spent: bool,
    /// `--forget-missing`: the missing files were forgotten after being reported.
    pub forget_missing: bool,
}

/// The summary after an audit: the run and what it read, what registration did, each verdict's
/// number with what it counts, what was left for later and why, corrupt and missing files
/// called out, the chain head, memory.
pub fn audit_summary(h: &AuditHead, of: AuditSummaryOf) -> String {
    let count = |state: &str| h.counts.get(state).copied().unwrap_or(0);
    let mut t = String::new();
    if h.mode == "stored" {
        t.push_str(&format!(
            "audit run {} (stored, {}): no object read; the store's own checksums compared in {:.2} s\n",
            h.run, h.status, h.seconds
        ));
    } else {
        t.push_str(&format!(
            "audit run {} ({}, {}): read {} ({}) in {:.2} s ({})\n",
            h.run,
            h.mode,
            h.status,
            human_count(h.files_read, "file", "files"),
            human_bytes(h.bytes_read),
            h.seconds,
            human_rate(h.bytes_read, h.seconds)
        ));
    }
    if of.registration {
        // Every file read is registered: new, or (under --ocfl) corrupt already, with the
        // inventory's digest as its reference.
        let (new, corrupt) = (count("new"), count("corrupt"));
        let mut line = format!(
            "registered {} in {} (the first audit of these roots)",
            human_count(new + corrupt, "file", "files"),
            h.catalog.path
        );
        if corrupt > 0 {
            line.push_str(&format!(
                ": {new} as read, {corrupt} with the digest its inventory gives, which its content does not match"
            ));
        }
        t.push_str(&line);
        t.push('\n');
    }
    verdict_rows(h, &mut t);
    if let Some(e) = &h.excluded {
        t.push_str(&crate::scan::excluded_line(e));
    }
    if h.not_read > 0 {
        let why = if of.budget_spent {
            "the budget (--max-bytes/--max-time) ran out; the next audit goes on from here"
        } else {
            "verified recently enough (--older-than)"
        };
        t.push_str(&format!(
            "not read this time: {}: {why}\n",
            human_count(h.not_read, "registered file", "registered files")
        ));
    }
    called_out(h, of, &mut t);
    if let Some(c) = &h.chain_digest {
        t.push_str(&format!("catalog head: run {} {c}\n", h.run));
    }
    if let Some(r) = h.peak_rss_bytes {
        t.push_str(&format!("peak memory: {}\n", human_bytes(r)));
    }
    t
}

/// Each verdict with what its number counts: ok always, the others when there are any.
fn verdict_rows(h: &AuditHead, t: &mut String) {
    let rows: Vec<(u64, &str)> = h
        .counts_in_order()
        .filter(|(v, n)| *v == "ok" || *n > 0)
        .map(|(v, n)| (n, v))
        .collect();
    let width = rows
        .iter()
        .map(|(n, _)| n.to_string().len())
        .max()
        .unwrap_or(1);
    let only_ok = rows.iter().all(|(_, v)| *v == "ok");
    for (n, v) in rows {
        t.push_str(&format!(
            "  {n:>width$} {v}: {}\n",
            verdict_words(v, &h.mode)
        ));
    }
    if only_ok {
        t.push_str("  no path corrupt, restored, modified, missing, new, moved or unreadable\n");
    }
}

/// Corrupt and missing files called out (the missing forgotten with `--forget-missing`).
fn called_out(h: &AuditHead, of: AuditSummaryOf, t: &mut String) {
    let count = |state: &str| h.counts.get(state).copied().unwrap_or(0);
    let corrupt = count("corrupt");
    if corrupt > 0 && h.mode == "stored" {
        t.push_str(&format!(
            "CORRUPT: {corrupt} object{} whose store's own checksum is no longer the digest registered from a read, size and mtime the same (or found corrupt before): read {} (a full audit) and restore from a good copy\n",
            if corrupt == 1 { "" } else { "s" },
            if corrupt == 1 { "it" } else { "them" }
        ));
    } else if corrupt > 0 {
        t.push_str(&format!(
            "CORRUPT: {corrupt} file{} changed content while size and mtime stayed the same (or, with --ocfl, differ from their inventory): silent corruption; restore from a good copy\n",
            if corrupt == 1 { "" } else { "s" }
        ));
    }
    let missing = count("missing");
    if missing > 0 && of.forget_missing {
        t.push_str(&format!(
            "forgotten (--forget-missing): {} no longer there, dropped from the collection; later audits do not report {}\n",
            human_count(missing, "registered file", "registered files"),
            if missing == 1 { "it" } else { "them" }
        ));
    } else if missing > 0 {
        t.push_str(&format!(
            "MISSING: {missing} registered file{} no longer there\n",
            if missing == 1 { "" } else { "s" }
        ));
    }
}

/// Calls its argument once per event, in order; returns its source's first error.
pub type EachAuditEvent<'a, E> = dyn FnMut(&mut dyn FnMut(&AuditEvent)) -> Result<(), E> + 'a;

/// The audit's JSON: the head, then the events one by one, one line each, as `each_event`
/// yields them (streamed from the catalog, so that memory stays flat whatever the run's size).
/// `each_event` returns the first error of its source; a write error ends the stream.
pub fn write_audit_json<E: From<std::io::Error>>(
    out: &mut dyn std::io::Write,
    head: &AuditHead,
    each_event: &mut EachAuditEvent<'_, E>,
) -> Result<(), E> {
    let text = serde_json::to_string_pretty(head).map_err(std::io::Error::from)?;
    // Reopen the object to append the events array.
    out.write_all(&text.as_bytes()[..text.len() - 2])?;
    out.write_all(b",\n  \"events\": [")?;
    let mut first = true;
    let mut err: Option<std::io::Error> = None;
    each_event(&mut |ev| {
        if err.is_some() {
            return;
        }
        let r = out
            .write_all(if first { b"\n    " } else { b",\n    " })
            .and_then(|()| serde_json::to_writer(&mut *out, ev).map_err(std::io::Error::from));
        first = false;
        if let Err(e) = r {
            err = Some(e);
        }
    })?;
    if let Some(e) = err {
        return Err(e.into());
    }
    out.write_all(b"\n  ]\n}\n")?;
    Ok(())
}
