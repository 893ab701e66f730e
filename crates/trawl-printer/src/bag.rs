//! A bag validation's human output: each finding on stderr, prefixed with the bag, then one
//! verdict line.

use crate::human_count;
use trawl_report::BagReport;

/// The messages to print on stderr, warnings first: `(is_error, text)`.
pub fn bag_findings(dir: &str, r: &BagReport) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = Vec::new();
    out.extend(r.warnings.iter().map(|w| (false, format!("{dir}: {w}"))));
    out.extend(r.errors.iter().map(|e| (true, format!("{dir}: {e}"))));
    out.extend(r.to_fetch.iter().map(|f| {
        let len = f.length.map_or("unknown".into(), |l| l.to_string());
        (
            true,
            format!(
                "{dir}: {}: not present; fetch.txt says to fetch it from {} ({len} bytes); trawl never fetches",
                f.path, f.url
            ),
        )
    }));
    out
}

/// `DIR is valid (...)` (`; it meets the BagIt Profile ID` when held to one) or `DIR is NOT
/// valid: N problems[, M files to fetch]`.
pub fn bag_verdict(dir: &str, r: &BagReport) -> String {
    let line = verdict_alone(dir, r);
    match &r.profile {
        Some(id) if r.is_valid() => format!("{line}; it meets the BagIt Profile {id}"),
        _ => line,
    }
}

fn verdict_alone(dir: &str, r: &BagReport) -> String {
    if r.is_unchecked() {
        format!(
            "{dir} was NOT CHECKED: its payload manifests use {}, which trawl cannot compute; a tool that can (bagit-python) may find it valid",
            r.cannot_check.join(", ")
        )
    } else if r.is_valid() && r.fast {
        format!(
            "{dir} is valid according to Payload-Oxum and file list (BagIt {}; --fast read no payload)",
            r.version
        )
    } else if r.is_valid() {
        format!(
            "{dir} is valid (BagIt {}, {}, {} checked)",
            r.version,
            human_count(r.files_checked, "file", "files"),
            human_count(r.bytes_checked, "byte", "bytes")
        )
    } else {
        let holey = if r.to_fetch.is_empty() {
            String::new()
        } else {
            format!(
                ", {} to fetch",
                human_count(r.to_fetch.len() as u64, "file", "files")
            )
        };
        format!(
            "{dir} is NOT valid: {}{holey}",
            human_count(r.errors.len() as u64, "problem", "problems")
        )
    }
}

/// What `bag update` did: `DIR: added A[; B already there]`, or that nothing was to add; and
/// that bag-info.txt was edited (`edited`).
pub fn bag_updated(dir: &str, added: &[&str], present: &[&str], edited: bool) -> String {
    if edited {
        let mut line =
            format!("{dir}: bag-info.txt edited, the tag manifests written again to match");
        if !added.is_empty() {
            line.push_str(&format!("; added {}", added.join(", ")));
        }
        if !present.is_empty() {
            line.push_str(&format!("; {} already there", present.join(", ")));
        }
        return line;
    }
    match (added.is_empty(), present.is_empty()) {
        (false, true) => format!("{dir}: added {}", added.join(", ")),
        (false, false) => format!(
            "{dir}: added {}; {} already there",
            added.join(", "),
            present.join(", ")
        ),
        (true, _) => format!(
            "{dir}: nothing to add: {} already there; the bag validates",
            present.join(", ")
        ),
    }
}
