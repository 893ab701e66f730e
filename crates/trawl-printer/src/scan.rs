//! A scan's human summary, from its typed report.

use crate::{human_bytes, human_count, human_rate};
use trawl_report::ScanReport;

/// What went to disk past `--memory`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spilled {
    /// The fingerprint indexes.
    pub fingerprints: bool,
    /// The per-file records.
    pub records: bool,
    /// Every failure was already named, as it happened, on the stream the summary goes to
    /// (stderr and stdout are one terminal or one file): counted, not named again.
    pub failures_named_above: bool,
}

/// What the user's rules left out, as one line (`excluded: ...`).
pub fn excluded_line(e: &trawl_report::ExcludedJson) -> String {
    let mut parts = vec![
        format!(
            "{} (not listed)",
            human_count(e.directories, "directory", "directories")
        ),
        format!(
            "{} ({})",
            human_count(e.files, "file", "files"),
            human_bytes(e.bytes)
        ),
    ];
    if e.other > 0 {
        parts.push(human_count(e.other, "other entry", "other entries"));
    }
    if let Some(n) = e.registered {
        parts.push(format!(
            "{} left as registered (not read, not missing)",
            human_count(n, "registered file", "registered files")
        ));
    }
    format!("excluded: {}\n", parts.join(", "))
}

/// The lines printed after a scan: totals, what was skipped, the reduction table, media,
/// memory, and every failure named.
pub fn scan_summary(r: &ScanReport, spilled: Spilled) -> String {
    let mut s = String::new();
    let t = &r.totals;
    let nothing_read = t.files == 0 && r.skipped.is_empty() && !r.failed.is_empty();
    if !nothing_read {
        s.push_str(&totals_line(r));
    }
    if let Some(u) = &r.reuse {
        s.push_str(&reuse_line(u));
    }
    skipped_line(r, &mut s);
    if let Some(e) = &r.excluded {
        s.push_str(&excluded_line(e));
    }
    findings(r, spilled, &mut s);
    // Nothing read because no path named could be: the errors said as they happened are the
    // whole story (no memory figure of a run that did nothing, no count of them again).
    if nothing_read && spilled.failures_named_above {
        return s;
    }
    if !nothing_read {
        memory_line(r, spilled, &mut s);
    }
    failures(r, spilled, &mut s);
    s
}

/// Files, bytes, time, rate and the digests computed.
fn totals_line(r: &ScanReport) -> String {
    let t = &r.totals;
    let digests = match r.algorithms.len() {
        0 => "no digests".to_string(),
        n => format!(
            "{n} digest{}: {}",
            if n == 1 { "" } else { "s" },
            r.algorithms.join(", ")
        ),
    };
    format!(
        "{}, {} read in {:.2} s ({}); {digests}\n",
        human_count(t.files, "file", "files"),
        human_bytes(t.bytes),
        t.seconds,
        human_rate(t.bytes, t.seconds),
    )
}

/// `--reuse`: how many files' digests came from the catalog, how many were read.
fn reuse_line(u: &trawl_report::ReuseJson) -> String {
    let changed = match u.changed {
        0 => String::new(),
        n => format!(" ({n} of them changed since it recorded them)"),
    };
    format!(
        "reuse: {} taken from {} (not read: {} as recorded), {} read{changed}\n",
        human_count(u.taken, "file's digests", "files' digests"),
        u.catalog,
        u.rule.join(", "),
        human_count(u.read, "file", "files"),
    )
}

/// What was skipped, by kind (`skipped: ...`), if anything was.
fn skipped_line(r: &ScanReport, s: &mut String) {
    let kind = |k: &str| {
        r.skipped
            .iter()
            .filter(|f| f.skipped.as_deref() == Some(k))
            .count()
    };
    let (links, loops) = (kind("symlink"), kind("symlink-loop"));
    let special = r.skipped.len() - links - loops;
    if !r.skipped.is_empty() {
        let mut parts = vec![
            human_count(special as u64, "special file", "special files"),
            format!(
                "{} not followed",
                human_count(links as u64, "symbolic link", "symbolic links")
            ),
        ];
        if loops > 0 {
            parts.push(human_count(loops as u64, "link loop", "link loops"));
        }
        s.push_str(&format!("skipped: {}\n", parts.join(", ")));
    }
}

/// The reduction table, duplicates (files and directories) and media.
fn findings(r: &ScanReport, spilled: Spilled, s: &mut String) {
    // Nothing read (a root that does not exist): the failures say it all, no table of zeros.
    if let Some(red) = r.reduction.as_ref().filter(|_| r.totals.files > 0) {
        s.push_str(&crate::reduction_table(red));
        if spilled.fingerprints {
            s.push_str("(the fingerprint index passed --memory and was spilled to disk)\n");
        }
    }
    if let Some(d) = &r.duplicates {
        s.push_str(&format!(
            "duplicates: {} of identical files ({}), {} redundant in {} (by {})\n",
            human_count(d.groups, "group", "groups"),
            human_count(d.files, "file", "files"),
            human_bytes(d.redundant_bytes),
            human_count(d.redundant_files, "file", "files"),
            d.algorithm
        ));
    }
    if let Some(dirs) = r
        .breakdown
        .as_ref()
        .and_then(|b| b.duplicate_directories.as_ref())
        .filter(|d| !d.is_empty())
    {
        s.push_str(&format!(
            "duplicate directories: {} (in the JSON and HTML reports)\n",
            human_count(dirs.len() as u64, "group", "groups")
        ));
    }
    let m = &r.media;
    if m.files > 0 {
        s.push_str(&format!(
            "media: {} indexed, {}{}\n",
            human_count(m.files, "FLV file", "FLV files"),
            human_count(m.keyframes, "keyframe", "keyframes"),
            match m.with_problems {
                0 => String::new(),
                n => format!(", {n} with problems (listed above)"),
            }
        ));
    }
}

/// The peak memory, where it was measured.
fn memory_line(r: &ScanReport, spilled: Spilled, s: &mut String) {
    let t = &r.totals;
    if let Some(rss) = t.peak_rss_bytes {
        // What trawl holds (what --memory bounds); the pages of files mapped to read them are
        // said apart: resident too, but the kernel drops them whenever it needs the room.
        let held = match t.peak_anon_bytes {
            Some(anon) if rss - anon.min(rss) > (anon / 2).max(32 << 20) => format!(
                "{} ({} resident with the pages of the files it mapped, which the kernel \
                 drops when it needs the room)",
                human_bytes(anon),
                human_bytes(rss)
            ),
            Some(anon) => human_bytes(anon),
            None => human_bytes(rss),
        };
        s.push_str(&format!(
            "peak memory: {held}{}\n",
            if spilled.records {
                " (the file records passed their share of --memory and waited on disk)"
            } else {
                ""
            }
        ));
    }
}

/// The failures: counted where they were named above, else each named.
fn failures(r: &ScanReport, spilled: Spilled, s: &mut String) {
    if !r.failed.is_empty() && spilled.failures_named_above {
        s.push_str(&format!(
            "FAILED: {} could not be read (named above)\n",
            human_count(r.failed.len() as u64, "file", "files")
        ));
    } else if !r.failed.is_empty() {
        s.push_str(&format!(
            "FAILED: {} could not be read:\n",
            human_count(r.failed.len() as u64, "file", "files")
        ));
        for f in &r.failed {
            match &f.error {
                Some(e) if e.worker.is_some() => s.push_str(&format!(
                    "  {} (on worker {})\n",
                    e.message,
                    e.worker.as_deref().unwrap_or_default()
                )),
                Some(e) => s.push_str(&format!("  {}\n", e.message)),
                None => {}
            }
        }
    }
}
